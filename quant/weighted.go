// This file is the importance-weighted block encoder (the imatrix method): for each block it
// searches the header (scales, and mins for Q4_K) that minimises sum_j w_j (x_j - q_j)² where
// q_j is x_j's dequantized value and w_j its importance (the mean square of the activation
// column that multiplies it), with the header at its stored precision (f16, 6-bit, int8).
// The idea is llama.cpp's importance-weighted quantization; the search is this package's own:
// a sweep of trial scales around the range's, each refined by weighted least squares, then for
// K-quants a local search over the rounded sub-block scales.
package quant

import (
	"encoding/binary"
	"math"

	"github.com/llmcloud/llmcloud/tensor"
)

// encodeWeighted encodes one block of x with importances w into blk.
func (f format) encodeWeighted(x, w []float32, blk []byte) {
	L := make([]int, f.unit)
	switch f.dt {
	case tensor.Q8_0, tensor.Q4_0:
		lo, hi := -127, 127
		if f.dt == tensor.Q4_0 {
			lo, hi = -8, 7
		}
		d := symScale(x, w, lo, hi, true)
		hd := tensor.F32ToF16(d)
		binary.LittleEndian.PutUint16(blk, hd)
	case tensor.Q6_K:
		var s [16]float32
		var maxAbs, maxS float32
		for g := 0; g < 16; g++ {
			s[g] = symScale(x[16*g:16*g+16], w[16*g:16*g+16], -32, 31, false)
			if a := float32(math.Abs(float64(s[g]))); a > maxAbs {
				maxAbs, maxS = a, s[g]
			}
		}
		clear(blk)
		if maxAbs == 0 {
			break
		}
		best := float32(math.Inf(1))
		var bestBlk [210]byte
		for _, den := range []float32{-128, 127, -127, -126, 126} {
			d := tensor.F16ToF32(tensor.F32ToF16(maxS / den))
			if d == 0 {
				continue
			}
			binary.LittleEndian.PutUint16(blk[208:], tensor.F32ToF16(maxS/den))
			for g := 0; g < 16; g++ {
				blk[192+g] = byte(int8(clamp(int(roundHalfEven(s[g]/d)), -128, 127)))
			}
			if e := f.roundErr(x, w, blk, L); e < best {
				best = e
				copy(bestBlk[:], blk)
			}
		}
		copy(blk, bestBlk[:])
	case tensor.Q4_K:
		var s, m [8]float32
		var maxS, maxM float32
		for g := 0; g < 8; g++ {
			s[g], m[g] = asymScale(x[32*g:32*g+32], w[32*g:32*g+32], 15)
			maxS, maxM = max(maxS, s[g]), max(maxM, m[g])
		}
		binary.LittleEndian.PutUint16(blk, tensor.F32ToF16(maxS/63))
		binary.LittleEndian.PutUint16(blk[2:], tensor.F32ToF16(maxM/63))
		sd, sm := f16(blk), f16(blk[2:])
		var ls, lm [8]uint8
		for g := 0; g < 8; g++ {
			if sd > 0 {
				ls[g] = uint8(clamp(int(roundHalfEven(s[g]/sd)), 0, 63))
			}
			if sm > 0 {
				lm[g] = uint8(clamp(int(roundHalfEven(m[g]/sm)), 0, 63))
			}
		}
		// Local search: each group's (scale, min) pair among its rounded neighbours.
		xs, ws := make([]float32, 32), make([]float32, 32)
		for g := 0; g < 8; g++ {
			copy(xs, x[32*g:32*g+32])
			copy(ws, w[32*g:32*g+32])
			bs, bm, be := ls[g], lm[g], float32(math.Inf(1))
			for ds := -1; ds <= 1; ds++ {
				for dm := -1; dm <= 1; dm++ {
					a, b := int(ls[g])+ds, int(lm[g])+dm
					if a < 0 || a > 63 || b < 0 || b > 63 {
						continue
					}
					if e := groupErr(xs, ws, sd*float32(a), sm*float32(b), 0, 15); e < be {
						bs, bm, be = uint8(a), uint8(b), e
					}
				}
			}
			ls[g], lm[g] = bs, bm
		}
		k4PutScaleMin(blk[4:16], &ls, &lm)
	}
	f.roundErr(x, w, blk, L)
	f.setQuants(blk, L)
}

// roundErr sets L to the nearest grid integers of x under blk's header and returns the
// weighted squared error.
func (f format) roundErr(x, w []float32, blk []byte, L []int) float32 {
	ng := f.unit / f.group
	d, m := make([]float32, ng), make([]float32, ng)
	f.parseGrid(blk, d, m)
	var e float32
	for i, v := range x {
		g := i / f.group
		l := f.nearest(v, d[g], m[g])
		L[i] = l
		r := v - (d[g]*float32(l) - m[g])
		e += w[i] * r * r
	}
	return e
}

// groupErr is the weighted error of x on the grid d*L - m, L in [lo, hi].
func groupErr(x, w []float32, d, m float32, lo, hi int) float32 {
	var e float32
	for i, v := range x {
		var q float32
		if d != 0 {
			q = d*float32(clamp(int(roundHalfEven((v+m)/d)), lo, hi)) - m
		} else {
			q = -m
		}
		r := v - q
		e += w[i] * r * r
	}
	return e
}

// symScale finds d for x ≈ d*l, l in [lo, hi], minimising the weighted error: trial scales
// mapping the largest-magnitude element onto lo or hi (and steps inside), each refined by
// weighted least squares; with f16Round the error is measured with d rounded to f16.
func symScale(x, w []float32, lo, hi int, f16Round bool) float32 {
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	if amax == 0 {
		return 0
	}
	rd := func(d float32) float32 {
		if f16Round {
			return tensor.F16ToF32(tensor.F32ToF16(d))
		}
		return d
	}
	eval := func(d float32) float32 {
		d = rd(d)
		if d == 0 {
			return float32(math.Inf(1))
		}
		var e float32
		for i, v := range x {
			l := float32(clamp(int(roundHalfEven(v/d)), lo, hi))
			r := v - d*l
			e += w[i] * r * r
		}
		return e
	}
	best, bestD := float32(math.Inf(1)), float32(0)
	for _, end := range []float32{float32(lo), float32(hi)} {
		for t := 0; t <= 16; t++ {
			den := end - float32(t)*0.1*sign(end)
			if den == 0 {
				continue
			}
			d := mx / den
			// weighted least squares of d given the integers
			var sxl, sll float32
			for i, v := range x {
				l := float32(clamp(int(roundHalfEven(v/d)), lo, hi))
				sxl += w[i] * v * l
				sll += w[i] * l * l
			}
			for _, c := range []float32{d, safeDiv(sxl, sll, d)} {
				if e := eval(c); e < best {
					best, bestD = e, c
				}
			}
		}
	}
	return bestD
}

func sign(v float32) float32 {
	if v < 0 {
		return -1
	}
	return 1
}

func safeDiv(a, b, def float32) float32 {
	if b == 0 {
		return def
	}
	return a / b
}

// asymScale finds s >= 0 and m >= 0 for x ≈ s*l - m, l in [0, nmax], minimising the
// weighted error: trial scales over the range [min(x,0), max(x)], each refined by weighted
// least squares of (s, m).
func asymScale(x, w []float32, nmax int) (float32, float32) {
	mn, mx := x[0], x[0]
	for _, v := range x {
		mn, mx = min(mn, v), max(mx, v)
	}
	mn = min(mn, 0)
	if mx == mn {
		return 0, -mn
	}
	best, bs, bm := float32(math.Inf(1)), (mx-mn)/float32(nmax), -mn
	L := make([]float32, len(x))
	for t := -10; t <= 10; t++ {
		iscale := (float32(nmax) + 0.1*float32(t)) / (mx - mn)
		var sw, sl, sll, sx, sxl float32
		for i, v := range x {
			l := float32(clamp(int(roundHalfEven((v-mn)*iscale)), 0, nmax))
			L[i] = l
			sw += w[i]
			sl += w[i] * l
			sll += w[i] * l * l
			sx += w[i] * v
			sxl += w[i] * v * l
		}
		det := sw*sll - sl*sl
		if det <= 0 {
			continue
		}
		s := (sw*sxl - sx*sl) / det
		b := (sll*sx - sl*sxl) / det // x ≈ s*l + b
		if b > 0 {
			b = 0
			s = safeDiv(sxl, sll, s)
		}
		if s <= 0 {
			continue
		}
		if e := groupErr(x, w, s, -b, 0, nmax); e < best {
			best, bs, bm = e, s, -b
		}
	}
	return bs, bm
}
