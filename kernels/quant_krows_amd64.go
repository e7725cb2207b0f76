// This file installs the AVX2 four-row K-quant decode kernels (quant_krows_amd64.s, generated
// by kernels/internal/asmgen/krows) when the CPU has AVX2, FMA and F16C.
package kernels

//go:generate sh -c "cd internal/asmgen/krows && go run . -out ../../../quant_krows_amd64.s -stubs ../../../quant_krows_stub_amd64.go -pkg kernels"

func init() {
	if hasQuantAVX2 {
		rows4K = [2]rowsKFunc{q4KRows4A, q6KRows4A}
		rowsKAsm = true
	}
}
