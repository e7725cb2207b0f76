package main

import "fmt"

// quadMax is the largest token count of the Q4_0 quad tiles (T accumulators, four nibble
// registers, the scales, the ones and three scratch registers: at most 16 ymm).
const quadMax = 7

// genQuads writes q4_0TileQ1xT (T = 1..quadMax): one row against T tokens (in pair layout) over
// block quads. Per token and quad, the pair unit of q4_0TileP2x4 (two VPMADDUBSW, VPADDW,
// VPMADDWD with ones) for blocks b, b+1 and for b+2, b+3, one VPHADDD that leaves lanes 0,1
// from b, 2,3 from b+2, 4,5 from b+1, 6,7 from b+3, one VPADDD of the four blocks' corrections,
// then one convert, one multiply by the weight scales and one FMA with the token's lane scales
// for all four blocks: 13 vector ops per quad instead of 16 for two pairs. The token's 8 lane
// scales and 8 lane corrections of a quad are one 64-byte record (q8Acts.sq, xstride/2 bytes per
// token).
func genQuads(a func(string, ...any)) {
	xtok := func(t int, base string, o int) string {
		bs, hs := []string{"DX", "R12"}, []string{"SI", "R13"}
		reg := bs[t/4]
		idx := []string{"", "(BX*1)", "(BX*2)", "(R9*1)"}
		if base != "DX" {
			reg = hs[t/4]
			idx = []string{"", "(R10*1)", "(R10*2)", "(R11*1)"}
		}
		s := fmt.Sprintf("(%s)%s", reg, idx[t%4])
		if o != 0 {
			s = fmt.Sprintf("%d%s", o, s)
		}
		return s
	}
	for T := 1; T <= quadMax; T++ {
		name, lab := fmt.Sprintf("q4_0TileQ1x%d", T), fmt.Sprintf("q4_1x%d", T)
		lo01, hi01, lo23, hi23 := T, T+1, T+2, T+3
		sc, ones, p0, p1, tmp := T+4, T+5, T+6, T+7, T+8
		if tmp > 15 {
			panic("too many registers")
		}
		a("")
		a("// func %s(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, nq int, out *float32, ostride int)", name)
		a("TEXT ·%s(SB), NOSPLIT, $0-72", name)
		for _, l := range []string{"MOVQ w+0(FP), AX", "MOVQ xs+16(FP), DX",
			"MOVQ xstride+24(FP), BX", "MOVQ xd+32(FP), SI", "MOVQ nq+48(FP), R8",
			"LEAQ (BX)(BX*2), R9", "MOVQ BX, R10", "SHRQ $0x01, R10", "LEAQ (R10)(R10*2), R11",
			"LEAQ (DX)(BX*4), R12", "LEAQ (SI)(R10*4), R13"} {
			a("\t%s", l)
		}
		for t := 0; t < T; t++ {
			a("\tVXORPS Y%d, Y%d, Y%d", t, t, t)
		}
		a("\tVMOVDQU p_ones16<>+0(SB), Y%d", ones)
		a("\tTESTQ R8, R8")
		a("\tJZ %s_end", lab)
		a("")
		a("%s_loop:", lab)
		for _, u := range [][3]int{{lo01, hi01, 0}, {lo23, hi23, 36}} {
			a("\tVMOVDQU %d(AX), X%d", u[2]+2, u[0])
			a("\tVINSERTI128 $0x01, %d(AX), Y%d, Y%d", u[2]+20, u[0], u[0])
			a("\tVPSRLW $0x04, Y%d, Y%d", u[0], u[1])
			a("\tVPAND p_mask0f<>+0(SB), Y%d, Y%d", u[0], u[0])
			a("\tVPAND p_mask0f<>+0(SB), Y%d, Y%d", u[1], u[1])
		}
		// Weight scales in lane order [b, b, b2, b2, b1, b1, b3, b3]: the four fp16 values into
		// one qword (b, b2, b1, b3; scalar ALU), each word doubled by VPUNPCKLWD, converted.
		a("\tMOVWQZX (AX), CX")
		for i, o := range []int{36, 18, 54} {
			a("\tMOVWQZX %d(AX), DI", o)
			a("\tSHLQ $0x%02x, DI", 16*(i+1))
			a("\tORQ DI, CX")
		}
		a("\tVMOVQ CX, X%d", sc)
		a("\tVPUNPCKLWD X%d, X%d, X%d", sc, sc, sc)
		a("\tVCVTPH2PS X%d, Y%d", sc, sc)
		for t := 0; t < T; t++ {
			for i, u := range [][3]int{{lo01, hi01, p0}, {lo23, hi23, p1}} {
				a("\tVPMADDUBSW %s, Y%d, Y%d", xtok(t, "DX", 64*i), u[0], u[2])
				a("\tVPMADDUBSW %s, Y%d, Y%d", xtok(t, "DX", 64*i+32), u[1], tmp)
				a("\tVPADDW Y%d, Y%d, Y%d", tmp, u[2], u[2])
				a("\tVPMADDWD Y%d, Y%d, Y%d", ones, u[2], u[2])
			}
			a("\tVPHADDD Y%d, Y%d, Y%d", p1, p0, p0)
			a("\tVPADDD %s, Y%d, Y%d", xtok(t, "SI", 32), p0, p0)
			a("\tVCVTDQ2PS Y%d, Y%d", p0, p0)
			a("\tVMULPS Y%d, Y%d, Y%d", sc, p0, p0)
			a("\tVFMADD231PS %s, Y%d, Y%d", xtok(t, "SI", 0), p0, t)
		}
		for _, l := range []string{"ADDQ $0x48, AX", "ADDQ $0x80, DX", "ADDQ $0x80, R12", "ADDQ $0x40, SI",
			"ADDQ $0x40, R13", "DECQ R8"} {
			a("\t%s", l)
		}
		a("\tJNZ %s_loop", lab)
		a("")
		a("%s_end:", lab)
		a("\tMOVQ out+56(FP), AX")
		a("\tMOVQ ostride+64(FP), CX")
		a("\tSHLQ $0x02, CX")
		for t := 0; t < T; t++ {
			a("\tVEXTRACTF128 $0x01, Y%d, X%d", t, p0)
			a("\tVADDPS X%d, X%d, X%d", p0, t, t)
			a("\tVHADDPS X%d, X%d, X%d", t, t, t)
			a("\tVHADDPS X%d, X%d, X%d", t, t, t)
			a("\tVMOVSS X%d, (AX)", t)
			if t < T-1 {
				a("\tADDQ CX, AX")
			}
		}
		a("\tVZEROUPPER")
		a("\tRET")
	}
}
