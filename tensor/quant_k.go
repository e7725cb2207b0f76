// This file implements the reference K-quant encoders for Q4_K and Q6_K, reproducing
// llama.cpp's quantize_row_q4_K_ref / quantize_row_q6_K_ref (with make_qkx2_quants and
// make_qx_quants) in float32 arithmetic and the same operation order. Every product that
// feeds an add is wrapped in float32() so Go never fuses it into an FMA.
package tensor

import (
	"encoding/binary"
	"math"
)

// nearestInt rounds to nearest, ties to even, using ggml's magic-number trick (valid for
// |v| <= 4194303).
func nearestInt(v float32) int {
	s := v + 12582912
	return int(int32(math.Float32bits(s)&0x007fffff) - 0x00400000)
}

func sqrtf(v float32) float32 { return float32(math.Sqrt(float64(v))) }

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// makeQKX2 fits x ≈ scale*L - min (L in 0..nmax, min >= 0) by weighted least squares over
// nstep+1 trial scales; it returns scale and the (positive) min and fills L.
func makeQKX2(nmax int, x, w []float32, L, Laux []uint8, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	n := len(x)
	mn, mx := x[0], x[0]
	sumW := w[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		for i := range L[:n] {
			L[i] = 0
		}
		return 0, -mn
	}
	fnmax := float32(nmax)
	iscale := fnmax / (mx - mn)
	scale = 1 / iscale
	var bestErr float32
	for i := 0; i < n; i++ {
		l := clampInt(nearestInt(float32(iscale*(x[i]-mn))), 0, nmax)
		L[i] = uint8(l)
		diff := float32(float32(scale*float32(l))+mn) - x[i]
		bestErr += float32(w[i] * float32(diff*diff))
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+fnmax) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			l := clampInt(nearestInt(float32(iscale*(x[i]-mn))), 0, nmax)
			Laux[i] = uint8(l)
			fl := float32(l)
			wl := float32(w[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curErr float32
			for i := 0; i < n; i++ {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - x[i]
				curErr += float32(w[i] * float32(diff*diff))
			}
			if curErr < bestErr {
				copy(L[:n], Laux[:n])
				bestErr, scale, mn = curErr, thisScale, thisMin
			}
		}
	}
	return scale, -mn
}

// quantQ4_K encodes 256-element super-blocks: per 32-element sub-block a scale and a min from
// makeQKX2, then both quantized to 6 bits against the block maxima, then the elements requantized
// against the rounded scales.
func quantQ4_K(src []float32, dst []byte) {
	var L [256]uint8
	var laux [32]uint8
	var weights [32]float32
	var scales, mins [8]float32
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*144 : b*144+144]
		var maxScale, maxMin float32
		for j := 0; j < 8; j++ {
			xs := x[32*j : 32*j+32]
			var sumX2 float32
			for _, v := range xs {
				sumX2 += float32(v * v)
			}
			avX := sqrtf(sumX2 / 32)
			for l, v := range xs {
				weights[l] = avX + abs32(v)
			}
			scales[j], mins[j] = makeQKX2(15, xs, weights[:], L[32*j:32*j+32], laux[:], -1, 0.1, 20)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		var invScale, invMin float32
		if maxScale > 0 {
			invScale = 63 / maxScale
		}
		if maxMin > 0 {
			invMin = 63 / maxMin
		}
		sc := blk[4:16]
		clear(sc)
		for j := 0; j < 8; j++ {
			ls := min(63, uint8(nearestInt(invScale*scales[j])))
			lm := min(63, uint8(nearestInt(invMin*mins[j])))
			if j < 4 {
				sc[j] = ls
				sc[j+4] = lm
			} else {
				sc[j+4] = ls&0xf | (lm&0xf)<<4
				sc[j-4] |= (ls >> 4) << 6
				sc[j] |= (lm >> 4) << 6
			}
		}
		hd := F32ToF16(maxScale / 63)
		hm := F32ToF16(maxMin / 63)
		binary.LittleEndian.PutUint16(blk, hd)
		binary.LittleEndian.PutUint16(blk[2:], hm)
		for j := 0; j < 8; j++ {
			s, m := scaleMinK4(j, sc)
			d := F16ToF32(hd) * float32(s)
			if d == 0 {
				continue
			}
			dm := F16ToF32(hm) * float32(m)
			for i := 0; i < 32; i++ {
				L[32*j+i] = uint8(clampInt(nearestInt((x[32*j+i]+dm)/d), 0, 15))
			}
		}
		q := blk[16:]
		for j := 0; j < 4; j++ {
			for l := 0; l < 32; l++ {
				q[32*j+l] = L[64*j+l] | L[64*j+l+32]<<4
			}
		}
	}
}

// makeQX fits x ≈ scale*(L-nmax) (L in 0..2*nmax-1) with weights x², trying 18 scales around
// nmax/max; it is make_qx_quants with rmse_type 1 and no importance weights.
func makeQX(nmax int, x []float32, L []int8) float32 {
	var amax, mx float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < 1e-15 {
		for i := range x {
			L[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	fit := func(iscale float32, store bool) (sumLX, sumL2 float32) {
		for i, v := range x {
			l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
			if store {
				L[i] = int8(l + nmax)
			}
			w := float32(v * v)
			fl := float32(l)
			sumLX += float32(float32(w*v) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		return
	}
	sumLX, sumL2 := fit(-fnmax/mx, true)
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale := -(fnmax + float32(0.1*float32(is))) / mx
		slx, sl2 := fit(iscale, false)
		if sl2 > 0 && float32(slx*slx) > float32(best*sl2) {
			fit(iscale, true)
			scale = slx / sl2
			best = scale * slx
		}
	}
	return scale
}

// quantQ6_K encodes 256-element super-blocks: 16 sub-blocks of 16 with an int8 scale each
// (quantized against the largest-magnitude scale) and 6-bit elements.
func quantQ6_K(src []float32, dst []byte) {
	var L [256]int8
	var scales [16]float32
	for b := 0; b < len(src)/256; b++ {
		x := src[b*256 : b*256+256]
		blk := dst[b*210 : b*210+210]
		var maxScale, maxAbsScale float32
		for ib := 0; ib < 16; ib++ {
			s := makeQX(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			scales[ib] = s
			if a := abs32(s); a > maxAbsScale {
				maxAbsScale, maxScale = a, s
			}
		}
		clear(blk)
		if maxAbsScale < 1e-15 {
			continue // all-zero block: d = 0, everything zero
		}
		iscale := -128 / maxScale
		hd := F32ToF16(1 / iscale)
		binary.LittleEndian.PutUint16(blk[208:], hd)
		sc := blk[192:208]
		for ib := 0; ib < 16; ib++ {
			sc[ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
		}
		for j := 0; j < 16; j++ {
			d := F16ToF32(hd) * float32(int8(sc[j]))
			if d == 0 {
				continue
			}
			for i := 0; i < 16; i++ {
				L[16*j+i] = int8(clampInt(nearestInt(x[16*j+i]/d), -32, 31) + 32)
			}
		}
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 128+32*h+32]
			Lh := L[128*h : 128*h+128]
			for l := 0; l < 32; l++ {
				q1, q2, q3, q4 := uint8(Lh[l]), uint8(Lh[l+32]), uint8(Lh[l+64]), uint8(Lh[l+96])
				ql[l] = q1&0xf | (q3&0xf)<<4
				ql[l+32] = q2&0xf | (q4&0xf)<<4
				qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	}
}
