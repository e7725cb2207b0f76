// This file holds the plain-Go twins of the AVX2 quantized kernels in quant_amd64.s. They do
// the same integer math and accumulate in the same eight float32 lanes, in the same order, so
// they agree with the assembly up to the rounding of a fused multiply-add (the assembly rounds
// a*b+c once, Go rounds float32(a*b) and then the sum). Exception: the Q4_0 decode kernels
// (q4_0Pairs4x1/8x1) group the integer partial sums into four lanes per row instead of eight,
// so their float sums are ordered differently (same value within float32 rounding; the tests
// bound the difference). They are the fallback on CPUs without
// AVX2/FMA/F16C and on other architectures, and the reference in the tests.
package kernels

import (
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// tileFunc computes an R x T tile of out = x · wᵀ; see genTile in internal/asmgen/quant.
type tileFunc func(w *byte, wstride int, xq *int8, xstride int, xd *float32, corr *int32, nb int, out *float32, ostride int)

// hsum8 adds eight lanes in the order of the assembly's horizontal sum.
func hsum8(a *[8]float32) float32 {
	return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
}

func f16(b []byte) float32 { return tensor.F16ToF32(uint16(b[0]) | uint16(b[1])<<8) }

// dotQ8_0Ref is the reference for one row and one token of a Q8_0 (q4 false) or Q4_0 (q4 true)
// matmul against activations quantized to blocks of 32. corr is nil for Q8_0.
func dotQ8_0Ref(q4 bool, w []byte, xq []int8, xd []float32, corr []int32, nb int) float32 {
	var acc [8]float32
	for b := 0; b < nb; b++ {
		var lanes [8]int32
		x := xq[b*32 : b*32+32]
		if q4 {
			blk := w[b*18 : b*18+18]
			for j := 0; j < 16; j++ {
				lanes[j/4] += int32(blk[2+j]&0xf) * int32(x[j])
				lanes[4+j/4] += int32(blk[2+j]>>4) * int32(x[16+j])
			}
			lanes[0] += corr[b*8]
		} else {
			blk := w[b*34 : b*34+34]
			for j := 0; j < 32; j++ {
				lanes[j/4] += int32(int8(blk[2+j])) * int32(x[j])
			}
		}
		bb := 34
		if q4 {
			bb = 18
		}
		dw, dx := f16(w[b*bb:]), xd[b]
		for l := range acc {
			acc[l] += float32(float32(lanes[l])*dw) * dx
		}
	}
	return hsum8(&acc)
}

// refTile returns a Go tileFunc for an R x T tile.
func refTile(q4 bool, R, T int) tileFunc {
	bb := 34
	if q4 {
		bb = 18
	}
	return func(w *byte, wstride int, xq *int8, xstride int, xd *float32, corr *int32, nb int, out *float32, ostride int) {
		ws := unsafe.Slice(w, (R-1)*wstride+nb*bb)
		xs := unsafe.Slice(xq, (T-1)*xstride+nb*32)
		ds := unsafe.Slice(xd, (T-1)*xstride/32+nb)
		var cs []int32
		if q4 {
			cs = unsafe.Slice(corr, ((T-1)*xstride+nb*32)/4)
		}
		os := unsafe.Slice(out, (T-1)*ostride+R)
		for t := 0; t < T; t++ {
			var c []int32
			if q4 {
				c = cs[t*xstride/4:]
			}
			for r := 0; r < R; r++ {
				os[t*ostride+r] = dotQ8_0Ref(q4, ws[r*wstride:], xs[t*xstride:], ds[t*xstride/32:], c, nb)
			}
		}
	}
}

// scalesQ4K unpacks the eight 6-bit scales and mins of a Q4_K block.
func scalesQ4K(q []byte) (sc, mn [8]int32) {
	for j := 0; j < 8; j++ {
		if j < 4 {
			sc[j], mn[j] = int32(q[j]&63), int32(q[j+4]&63)
		} else {
			sc[j] = int32(q[j+4]&0xf | (q[j-4]>>6)<<4)
			mn[j] = int32(q[j+4]>>4 | (q[j]>>6)<<4)
		}
	}
	return
}

// dotQ4KRef is the reference Q4_K x Q8_K dot product (see genDotQ4K).
func dotQ4KRef(w []byte, xq []int8, xd []float32, bsum8 []int16, nb int) float32 {
	var acc [8]float32
	var accm [4]float32
	for b := 0; b < nb; b++ {
		blk := w[b*144 : b*144+144]
		x := xq[b*256 : b*256+256]
		sc, mn := scalesQ4K(blk[4:16])
		dx := xd[b]
		var ml [4]int32
		for i := 0; i < 4; i++ {
			ml[i] = mn[2*i]*int32(bsum8[b*8+2*i]) + mn[2*i+1]*int32(bsum8[b*8+2*i+1])
		}
		fm := f16(blk[2:]) * dx
		for i := range ml {
			accm[i] += float32(ml[i]) * fm
		}
		var lanes [8]int32
		for c := 0; c < 4; c++ {
			q := blk[16+32*c : 48+32*c]
			for j := 0; j < 32; j++ {
				lanes[j/4] += sc[2*c] * int32(q[j]&0xf) * int32(x[64*c+j])
				lanes[j/4] += sc[2*c+1] * int32(q[j]>>4) * int32(x[64*c+32+j])
			}
		}
		f := f16(blk) * dx
		for l := range acc {
			acc[l] += float32(lanes[l]) * f
		}
	}
	return hsum8(&acc) - ((accm[0] + accm[1]) + (accm[2] + accm[3]))
}

// dotQ6KRef is the reference Q6_K x Q8_K dot product (see genDotQ6K).
func dotQ6KRef(w []byte, xq []int8, xd []float32, bsums []int16, nb int) float32 {
	var acc [8]float32
	for b := 0; b < nb; b++ {
		blk := w[b*210 : b*210+210]
		x := xq[b*256 : b*256+256]
		sc := blk[192:208]
		var lanes [8]int32
		for l := 0; l < 8; l++ {
			lanes[l] = -32 * (int32(int8(sc[2*l]))*int32(bsums[b*16+2*l]) + int32(int8(sc[2*l+1]))*int32(bsums[b*16+2*l+1]))
		}
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 160+32*h]
			for j := 0; j < 32; j++ {
				q := [4]int32{
					int32(ql[j]&0xf | (qh[j]&3)<<4),
					int32(ql[j+32]&0xf | (qh[j]>>2&3)<<4),
					int32(ql[j]>>4 | (qh[j]>>4&3)<<4),
					int32(ql[j+32]>>4 | (qh[j]>>6&3)<<4),
				}
				for i := 0; i < 4; i++ {
					g := 8*h + 2*i + j/16
					lanes[j/4] += int32(int8(sc[g])) * q[i] * int32(x[128*h+32*i+j])
				}
			}
		}
		f := f16(blk[208:]) * xd[b]
		for l := range acc {
			acc[l] += float32(lanes[l]) * f
		}
	}
	return hsum8(&acc)
}

// q8RowsRef is the reference for q8_0Rows: nrows consecutive Q8_0 rows (rs bytes apart) against
// one token; even blocks go to one set of lanes, odd blocks to another, added at the end.
func q8RowsRef(w []byte, rs, nrows int, xq []int8, xd []float32, nb int, out []float32) {
	for r := 0; r < nrows; r++ {
		row := w[r*rs:]
		var acc [2][8]float32
		for b := 0; b < nb; b++ {
			var lanes [8]int32
			blk := row[34*b : 34*b+34]
			for j := 0; j < 32; j++ {
				lanes[j/4] += int32(int8(blk[2+j])) * int32(xq[32*b+j])
			}
			dw := f16(blk)
			a := &acc[b%2]
			if b == nb-1 && nb%2 == 1 {
				a = &acc[0]
			}
			for l := range a {
				a[l] += float32(float32(lanes[l])*dw) * xd[b]
			}
		}
		for l := range acc[0] {
			acc[0][l] += acc[1][l]
		}
		out[r] = hsum8(&acc[0])
	}
}
