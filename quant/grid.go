// This file is the view of a GGUF block format as a grid: each group of G consecutive
// elements of a row dequantizes as D*L - M for an integer L in [QMin, QMax], where D and M
// come from the block header (already rounded to the header's precision). parseGrid reads
// D and M from encoded blocks, setQuants writes chosen L into them; with both, a method can
// pick the headers one way and the integers another (GPTQ) and still write the exact bytes
// llama.cpp reads.
//
//	Q8_0: blocks of 32, f16 d:                 D = d,      M = 0,     L in [-128, 127]
//	Q4_0: blocks of 32, f16 d:                 D = d,      M = 8d,    L in [0, 15]
//	Q4_K: 256 = 8 groups of 32, f16 d, dmin,
//	      6-bit sc, m per group:               D = d*sc,   M = dmin*m, L in [0, 15]
//	Q6_K: 256 = 16 groups of 16, f16 d,
//	      int8 sc per group:                   D = d*sc,   M = 32*D,  L in [0, 63]
package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// format is the grid shape of a block type.
type format struct {
	dt         tensor.DType
	unit       int // elements per block
	group      int // elements per (D, M) group
	bytes      int // bytes per block
	qmin, qmax int
}

func formatOf(dt tensor.DType) (format, error) {
	switch dt {
	case tensor.Q8_0:
		return format{dt, 32, 32, 34, -128, 127}, nil
	case tensor.Q4_0:
		return format{dt, 32, 32, 18, 0, 15}, nil
	case tensor.Q4_K:
		return format{dt, 256, 32, 144, 0, 15}, nil
	case tensor.Q6_K:
		return format{dt, 256, 16, 210, 0, 63}, nil
	}
	return format{}, fmt.Errorf("quant: %s is not a block type the calibrated methods write (q8_0, q4_0, q4_k, q6_k)", dt)
}

func f16(b []byte) float32 { return tensor.F16ToF32(binary.LittleEndian.Uint16(b)) }

// k4ScaleMin unpacks Q4_K's 6-bit scale and min of group j.
func k4ScaleMin(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// k4PutScaleMin packs the eight 6-bit scales and mins of a Q4_K block into sc[12].
func k4PutScaleMin(sc []byte, ls, lm *[8]uint8) {
	clear(sc[:12])
	for j := 0; j < 8; j++ {
		if j < 4 {
			sc[j] = ls[j]
			sc[j+4] = lm[j]
		} else {
			sc[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
			sc[j-4] |= (ls[j] >> 4) << 6
			sc[j] |= (lm[j] >> 4) << 6
		}
	}
}

// parseGrid fills d, m (one per group of the block blk) from the block's header.
func (f format) parseGrid(blk []byte, d, m []float32) {
	switch f.dt {
	case tensor.Q8_0:
		d[0], m[0] = f16(blk), 0
	case tensor.Q4_0:
		d[0] = f16(blk)
		m[0] = 8 * d[0]
	case tensor.Q4_K:
		sd, sm := f16(blk), f16(blk[2:])
		for j := 0; j < 8; j++ {
			s, mn := k4ScaleMin(j, blk[4:16])
			d[j], m[j] = sd*float32(s), sm*float32(mn)
		}
	case tensor.Q6_K:
		sd := f16(blk[208:])
		for j := 0; j < 16; j++ {
			d[j] = sd * float32(int8(blk[192+j]))
			m[j] = 32 * d[j]
		}
	}
}

// setQuants writes the integers L (one per element of the block) into blk.
func (f format) setQuants(blk []byte, L []int) {
	switch f.dt {
	case tensor.Q8_0:
		for j, l := range L[:32] {
			blk[2+j] = byte(int8(l))
		}
	case tensor.Q4_0:
		for j := 0; j < 16; j++ {
			blk[2+j] = byte(L[j]) | byte(L[j+16])<<4
		}
	case tensor.Q4_K:
		q := blk[16:]
		for j := 0; j < 4; j++ {
			for l := 0; l < 32; l++ {
				q[32*j+l] = byte(L[64*j+l]) | byte(L[64*j+l+32])<<4
			}
		}
	case tensor.Q6_K:
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 128+32*h+32]
			Lh := L[128*h : 128*h+128]
			for l := 0; l < 32; l++ {
				q1, q2, q3, q4 := byte(Lh[l]), byte(Lh[l+32]), byte(Lh[l+64]), byte(Lh[l+96])
				ql[l] = q1&0xf | (q3&0xf)<<4
				ql[l+32] = q2&0xf | (q4&0xf)<<4
				qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	}
}

// nearest is the grid integer nearest to x in a group of scale d and offset m.
func (f format) nearest(x, d, m float32) int {
	if d == 0 {
		return f.zero()
	}
	return clamp(int(roundHalfEven((x+m)/d)), f.qmin, f.qmax)
}

// zero is the integer that stands for 0 in a symmetric group (any L when D = 0).
func (f format) zero() int {
	switch f.dt {
	case tensor.Q4_0:
		return 8
	case tensor.Q6_K:
		return 32
	}
	return 0
}

func clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }

func roundHalfEven(v float32) float32 {
	// math.RoundToEven on float64 is exact for float32 inputs.
	return float32(roundEven64(float64(v)))
}
