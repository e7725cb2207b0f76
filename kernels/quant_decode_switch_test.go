package kernels

import "testing"

// TestDecodeKernelsOtherSetting runs the tests of the one-token paths again with
// useDecodeVNNI flipped, so that both decode kernel families (VNNI rows and AVX2 rows) are
// checked on a VNNI CPU whatever its default (quant_amd64.go: off where AMX is present).
func TestDecodeKernelsOtherSetting(t *testing.T) {
	if !quantVNNI {
		t.Skip("no VNNI kernels: decode runs the AVX2 (or Go) kernels only")
	}
	defer func(v bool) { useDecodeVNNI = v }(useDecodeVNNI)
	useDecodeVNNI = !useDecodeVNNI
	t.Logf("useDecodeVNNI = %v", useDecodeVNNI)
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"MatMulQuant", TestMatMulQuant},
		{"GemvStreams", TestGemvStreams},
		{"GemvStreamsK", TestGemvStreamsK},
		{"MatMulShared", TestMatMulShared},
		{"MatMulSharedOneJob", TestMatMulSharedOneJob},
		{"MatMulEach", TestMatMulEach},
		{"MatMulEachStreams", TestMatMulEachStreams},
		{"MatMulZeroFused", TestMatMulZeroFused},
		{"MatMulInvariant", TestMatMulInvariant},
	} {
		t.Run(tc.name, tc.f)
	}
}
