// Command bf16 generates kernels/gemm_bf16_amd64.s: the AVX-512 BF16 micro-kernel of
// kernels.GemmBF16 (an 8x32 tile of C from packed bf16 pair panels, VDPBF16PS with the A pair
// broadcast from memory) and the AVX2 fallback (4x16, bf16 widened to f32 in registers, FMA).
// Go's assembler has no VDPBF16PS, so this program encodes it (EVEX.512.F3.0F38.W0 52 /r,
// Intel SDM vol. 2) and writes it as BYTE directives; the other instructions are plain Go
// assembly. Run through `go generate ./kernels/` (see kernels/gemm_bf16.go).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

var out strings.Builder

func p(format string, a ...any) { fmt.Fprintf(&out, format+"\n", a...) }

// vdpbf16psBcst encodes VDPBF16PS zmm(dst), zmm(src1), dword [base + disp]{1to16} for a base
// register of number base (0-7: AX CX DX BX - - SI DI, no SP/BP) and disp a multiple of 4.
func vdpbf16psBcst(dst, src1, base, disp int) []byte {
	if base == 4 || base == 5 || base > 7 || disp%4 != 0 || disp/4 > 127 || disp < 0 {
		panic("vdpbf16ps: unsupported operand")
	}
	inv := func(bit int) byte { return byte(1 - bit) }
	p0 := inv(dst>>3&1)<<7 | 1<<6 | 1<<5 | inv(dst>>4&1)<<4 | 0b10 // ~R ~X ~B ~R' 00 mm=0F38
	p1 := byte(0)<<7 | byte(^src1&0xf)<<3 | 1<<2 | 0b10            // W0 ~vvvv 1 pp=F3
	p2 := byte(0b10)<<5 | 1<<4 | inv(src1>>4&1)<<3                 // z0 L'L=512 b=1 ~V' aaa=0
	b := []byte{0x62, p0, p1, p2, 0x52}
	if disp == 0 {
		return append(b, byte(dst&7)<<3|byte(base))
	}
	return append(b, 0b01<<6|byte(dst&7)<<3|byte(base), byte(disp/4)) // disp8*N, N = 4
}

func bytes(b []byte, comment string) {
	var s []string
	for _, x := range b {
		s = append(s, fmt.Sprintf("BYTE $0x%02x", x))
	}
	p("\t%s // %s", strings.Join(s, "; "), comment)
}

// kernel512: C[r][j] (+)= Σ_q Σ_{e=1,0} A[r][2q+e]·B[2q+e][j] for r < 8, j < 32, q < kp, where
// the pair (A[r][2q], A[r][2q+1]) is the uint32 a[q*8+r] (low half first) and (B[2q][j],
// B[2q+1][j]) is b[q*32+j]. AX=a, BX=b, CX=c, DX=ldc (bytes), SI=kp, DI=acc.
func kernel512() {
	p("// func gemmBF16x8x32(kp int, a *uint32, b *uint32, c *float32, ldc int, acc int)")
	p("TEXT ·gemmBF16x8x32(SB), NOSPLIT, $0-48")
	p("\tMOVQ kp+0(FP), SI")
	p("\tMOVQ a+8(FP), AX")
	p("\tMOVQ b+16(FP), BX")
	p("\tMOVQ c+24(FP), CX")
	p("\tMOVQ ldc+32(FP), DX")
	p("\tMOVQ acc+40(FP), DI")
	for z := 16; z < 32; z++ {
		p("\tVPXORD Z%d, Z%d, Z%d", z, z, z)
	}
	p("loop:")
	p("\tVMOVDQU32 (BX), Z0")
	p("\tVMOVDQU32 64(BX), Z1")
	for r := 0; r < 8; r++ {
		for h := 0; h < 2; h++ {
			bytes(vdpbf16psBcst(16+2*r+h, h, 0, 4*r), fmt.Sprintf("VDPBF16PS.BCST %d(AX), Z%d, Z%d", 4*r, h, 16+2*r+h))
		}
	}
	p("\tADDQ $32, AX")
	p("\tADDQ $128, BX")
	p("\tDECQ SI")
	p("\tJNZ loop")
	p("\tTESTQ DI, DI")
	p("\tJZ store")
	for r := 0; r < 8; r++ {
		p("\tVADDPS (CX), Z%d, Z%d", 16+2*r, 16+2*r)
		p("\tVADDPS 64(CX), Z%d, Z%d", 17+2*r, 17+2*r)
		p("\tVMOVUPS Z%d, (CX)", 16+2*r)
		p("\tVMOVUPS Z%d, 64(CX)", 17+2*r)
		p("\tADDQ DX, CX")
	}
	p("\tVZEROUPPER")
	p("\tRET")
	p("store:")
	for r := 0; r < 8; r++ {
		p("\tVMOVUPS Z%d, (CX)", 16+2*r)
		p("\tVMOVUPS Z%d, 64(CX)", 17+2*r)
		p("\tADDQ DX, CX")
	}
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
}

// kernel256 is the AVX2+FMA fallback: a 4x16 tile from panels of 4-row A pairs and 16-column
// B pairs. Each bf16 is widened to f32 in a register (the high half: AND 0xffff0000; the low
// half: shift left 16) and added with FMA, the odd element of a pair first as VDPBF16PS does
// (each product of two bf16 is exact in f32, so the result is the same). Y0-Y7 accumulators,
// Y8-Y11 B halves, Y12-Y13 A, Y15 the mask.
func kernel256() {
	p("// func gemmBF16x4x16(kp int, a *uint32, b *uint32, c *float32, ldc int, acc int)")
	p("TEXT ·gemmBF16x4x16(SB), NOSPLIT, $0-48")
	p("\tMOVQ kp+0(FP), SI")
	p("\tMOVQ a+8(FP), AX")
	p("\tMOVQ b+16(FP), BX")
	p("\tMOVQ c+24(FP), CX")
	p("\tMOVQ ldc+32(FP), DX")
	p("\tMOVQ acc+40(FP), DI")
	for y := 0; y < 8; y++ {
		p("\tVXORPS Y%d, Y%d, Y%d", y, y, y)
	}
	p("\tMOVL $0xffff0000, R8")
	p("\tMOVD R8, X15")
	p("\tVPBROADCASTD X15, Y15")
	p("loop2:")
	p("\tVMOVDQU (BX), Y8")
	p("\tVMOVDQU 32(BX), Y9")
	p("\tVPAND Y15, Y8, Y10") // odd (high) halves of columns 0-7
	p("\tVPAND Y15, Y9, Y11")
	p("\tVPSLLD $16, Y8, Y8") // even (low) halves
	p("\tVPSLLD $16, Y9, Y9")
	for r := 0; r < 4; r++ {
		p("\tVPBROADCASTD %d(AX), Y12", 4*r)
		p("\tVPAND Y15, Y12, Y13")
		p("\tVPSLLD $16, Y12, Y12")
		p("\tVFMADD231PS Y13, Y10, Y%d", 2*r)
		p("\tVFMADD231PS Y13, Y11, Y%d", 2*r+1)
		p("\tVFMADD231PS Y12, Y8, Y%d", 2*r)
		p("\tVFMADD231PS Y12, Y9, Y%d", 2*r+1)
	}
	p("\tADDQ $16, AX")
	p("\tADDQ $64, BX")
	p("\tDECQ SI")
	p("\tJNZ loop2")
	p("\tTESTQ DI, DI")
	p("\tJZ store2")
	for r := 0; r < 4; r++ {
		p("\tVADDPS (CX), Y%d, Y%d", 2*r, 2*r)
		p("\tVADDPS 32(CX), Y%d, Y%d", 2*r+1, 2*r+1)
		p("\tVMOVUPS Y%d, (CX)", 2*r)
		p("\tVMOVUPS Y%d, 32(CX)", 2*r+1)
		p("\tADDQ DX, CX")
	}
	p("\tVZEROUPPER")
	p("\tRET")
	p("store2:")
	for r := 0; r < 4; r++ {
		p("\tVMOVUPS Y%d, (CX)", 2*r)
		p("\tVMOVUPS Y%d, 32(CX)", 2*r+1)
		p("\tADDQ DX, CX")
	}
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
}

// cvtPairs512: dst[i] = bf16(src[2i]) | bf16(src[2i+1])<<16 for i < n (n a multiple of 8),
// rounding to nearest even: 16 floats -> 8 words per iteration (VPMOVDW keeps the low halves).
func cvtPairs512() {
	p("// func cvtPairsBF16(dst *uint32, src *float32, n int)")
	p("TEXT ·cvtPairsBF16(SB), NOSPLIT, $0-24")
	p("\tMOVQ dst+0(FP), DI")
	p("\tMOVQ src+8(FP), SI")
	p("\tMOVQ n+16(FP), CX")
	p("\tSHRQ $3, CX")
	p("\tJZ done3")
	p("\tMOVL $0x7fff, R8")
	p("\tVPBROADCASTD R8, Z30")
	p("\tMOVL $1, R8")
	p("\tVPBROADCASTD R8, Z31")
	p("loop3:")
	p("\tVMOVDQU32 (SI), Z0")
	p("\tVPSRLD $16, Z0, Z1")
	p("\tVPANDD Z31, Z1, Z1")
	p("\tVPADDD Z30, Z0, Z0")
	p("\tVPADDD Z1, Z0, Z0")
	p("\tVPSRLD $16, Z0, Z0")
	p("\tVPMOVDW Z0, (DI)")
	p("\tADDQ $64, SI")
	p("\tADDQ $32, DI")
	p("\tDECQ CX")
	p("\tJNZ loop3")
	p("\tVZEROUPPER")
	p("done3:")
	p("\tRET")
	p("")
}

// cvtInterleave512: dst[j] = bf16(s0[j]) | bf16(s1[j])<<16 for j < n (n a multiple of 16).
func cvtInterleave512() {
	p("// func cvtInterleaveBF16(dst *uint32, s0, s1 *float32, n int)")
	p("TEXT ·cvtInterleaveBF16(SB), NOSPLIT, $0-32")
	p("\tMOVQ dst+0(FP), DI")
	p("\tMOVQ s0+8(FP), SI")
	p("\tMOVQ s1+16(FP), DX")
	p("\tMOVQ n+24(FP), CX")
	p("\tSHRQ $4, CX")
	p("\tJZ done4")
	p("\tMOVL $0x7fff, R8")
	p("\tVPBROADCASTD R8, Z30")
	p("\tMOVL $1, R8")
	p("\tVPBROADCASTD R8, Z31")
	p("\tMOVL $0xffff0000, R8")
	p("\tVPBROADCASTD R8, Z29")
	p("loop4:")
	p("\tVMOVDQU32 (SI), Z0")
	p("\tVMOVDQU32 (DX), Z2")
	for _, r := range []int{0, 2} {
		p("\tVPSRLD $16, Z%d, Z%d", r, r+1)
		p("\tVPANDD Z31, Z%d, Z%d", r+1, r+1)
		p("\tVPADDD Z30, Z%d, Z%d", r, r)
		p("\tVPADDD Z%d, Z%d, Z%d", r+1, r, r)
	}
	p("\tVPSRLD $16, Z0, Z0")
	p("\tVPANDD Z29, Z2, Z2")
	p("\tVPORD Z2, Z0, Z0")
	p("\tVMOVDQU32 Z0, (DI)")
	p("\tADDQ $64, SI")
	p("\tADDQ $64, DX")
	p("\tADDQ $64, DI")
	p("\tDECQ CX")
	p("\tJNZ loop4")
	p("\tVZEROUPPER")
	p("done4:")
	p("\tRET")
	p("")
}

func main() {
	o := flag.String("out", "gemm_bf16_amd64.s", "output file")
	flag.Parse()
	p("// Code generated by command: go run ./kernels/internal/asmgen/bf16. DO NOT EDIT.")
	p("")
	p("#include \"textflag.h\"")
	p("")
	kernel512()
	kernel256()
	cvtPairs512()
	cvtInterleave512()
	if err := os.WriteFile(*o, []byte(out.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
