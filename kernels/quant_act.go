// This file quantizes activations for the integer dot products of the quantized matmul, as
// llama.cpp does: to blocks of 32 (Q8_0 style: fp16 scale amax/127, q = round-half-even(x*127/amax))
// for Q8_0/Q4_0 weights, and to blocks of 256 (Q8_K: f32 scale max/-127, q = nearest(x*-127/max),
// plus 16-element sums) for Q4_K/Q6_K weights. The quantized activations live in llmcloud's own
// layout (separate int8, scale and sum arrays), not in ggml's block structs.
package kernels

import (
	"math"
	"sync"

	"github.com/llmcloud/llmcloud/tensor"
)

// q8Acts holds m activation rows of k values quantized to blocks of 32.
type q8Acts struct {
	m, k, nb int
	ready    uint16    // derived layouts computed since the last quantize (readyZ8, ...)
	qs       []int8    // [m][k]
	d        []float32 // [m][nb] block scales (fp16-rounded, as float32)
	corr     []int32   // [m][nb][8]: lane 0 = -8*Σq of the block, lanes 1..7 = 0 (Q4_0 weights only)

	// Token 0 rearranged per block pair for the AVX2 Q4_0 decode kernel (q4_0Rows4A):
	x2 []int8    // [nb/2][64]: x_b[0:16] x_b1[0:16] x_b[16:32] x_b1[16:32]
	d2 []float32 // [nb/2][8]: dx_b x4, dx_b1 x4
	c2 []int32   // [nb/2][8]: corr_b 0 0 0 corr_b1 0 0 0

	// The layout of the AVX-512 VNNI kernels (quant_vnni.go), per token and block pair:
	xz []int8    // [m][k] x_b[0:16] x_b1[0:16] x_b[16:32] x_b1[16:32] (Q4_0, and Q8_0 on AVX2)
	dz []float32 // [m][nb/2][16] lane scales
	cz []int32   // [m][nb/2][16] lane corrections
	fz []float32 // [m][nb/2][16] Q8_0 only: float32(cz)·dz, the corrections the four-row decode kernel adds in float
	// The lane scales and corrections of the AVX2 Q4_0 pair tiles (quant_pairs.go; values in xz;
	// dp also for the Q8_0 tiles of quant_pairs8h.go):
	dp []float32 // [m][nb/2][8]: dx_b x4, dx_b1 x4
	cp []int32   // [m][nb/2][8]: -8·Σx of block b in lane 0, of b+1 in lane 4
	// The lane scales of the AVX2 Q8_0 pair tiles (quant_pairs8.go; values in qs):
	d8 []float32 // [m][nb/2][8]: dx_b, dx_b, dx_b1, dx_b1, twice
	// The records of the AVX2 Q4_0 quad tiles (quant_quads.go; values in xz), per token and quad:
	sq []int32 // [m][nb/4][16]: 8 lane scales (float32 bits), then 8 lane corrections
	// The AVX2 Q4_0 cross-interleaved quad tiles (quant_quads4x.go), per token and quad:
	xq []int8  // [m][k]: byte 32g+8j+i = element x4Elem(g, i) of block b+j
	sx []int32 // [m][nb/4][16]: 8 lane scales (float32 bits), then 8 lane corrections
	// Token 0 in block quads for the VNNI Q4_0 decode kernel (q4_0RowsZ):
	x4 []int8    // [nb/4][128]: x_b[0:16] .. x_b3[0:16], x_b[16:32] .. x_b3[16:32]
	d4 []float32 // [nb/4][16] lane scales (dx of block b+l/4)
	c4 []int32   // [nb/4][16] lane corrections (-8·Σx of block b+i in lane 4i)
	// The records of the VNNI Q4_0 16-row tiles (quant_vnni_i16.go), per token and block:
	xi []byte // [m][nb][40]: the 32 values, int32 -8·Σx, float32 dx
	// Token 0's records of the VNNI Q4_0Z decode kernel (matmul_zero_fused.go), per block quad:
	zr []byte // [nb/4][256]: 128 values in quad order, 16 lane scales, 16 lane sums Σx
	// The AMX tiles' layout (quant_amx.go): the block scales of every 16 tokens transposed,
	// and the last partial tile's values padded with zero tokens.
	dt []float32 // [m/16 rounded up][nb][16]
	xa []int8    // [16][k], when m is not a multiple of 16
}

// Bits of q8Acts.ready.
const (
	readyZ8 = 1 << iota // dz, cz for Q8_0 weights
	readyZ4             // xz, dz, cz for Q4_0 weights
	readyQuad
	readyPair
	readyP     // xz, dp, cp for the AVX2 Q4_0 pair tiles
	readyP8    // d8 for the AVX2 Q8_0 pair tiles
	readyQ4    // sq for the AVX2 Q4_0 quad tiles
	readyD2    // d2 alone (pairScales)
	readyH8    // xz, dp for the AVX2 Q8_0 half-interleaved pair tiles (no cp)
	readyX4    // xq, sx for the AVX2 Q4_0 cross-interleaved quad tiles
	readyQ8X   // xq, sx (lane scales only) for the AVX2 Q8_0 packed quad tiles
	readyI16   // xi for the VNNI Q4_0 16-row tiles
	readyQuadZ // zr for the VNNI Q4_0Z decode kernel
	readyAMX   // dt, xa for the AMX tiles
)

// pairScales fills d2 from token 0 (nb even) as pairLayout does, for the AVX2 Q8_0 decode.
func (a *q8Acts) pairScales() {
	if a.ready&(readyPair|readyD2) != 0 {
		return
	}
	a.ready |= readyD2
	np := a.nb / 2
	a.d2 = grow(a.d2, np*8)
	for i := 0; i < np; i++ {
		d := a.d2[8*i : 8*i+8]
		for j := 0; j < 4; j++ {
			d[j], d[4+j] = a.d[2*i], a.d[2*i+1]
		}
	}
}

// pairLayout fills x2, d2 and c2 from token 0 (nb even, corrections computed).
func (a *q8Acts) pairLayout() {
	if a.ready&readyPair != 0 {
		return
	}
	a.ready |= readyPair
	np := a.nb / 2
	a.x2 = grow(a.x2, np*64)
	a.d2 = grow(a.d2, np*8)
	a.c2 = grow(a.c2, np*8)
	for i := 0; i < np; i++ {
		q0, q1 := a.qs[64*i:64*i+32], a.qs[64*i+32:64*i+64]
		x := a.x2[64*i : 64*i+64]
		copy(x[0:16], q0[0:16])
		copy(x[16:32], q1[0:16])
		copy(x[32:48], q0[16:32])
		copy(x[48:64], q1[16:32])
		d, c := a.d2[8*i:8*i+8], a.c2[8*i:8*i+8]
		clear(c)
		c[0], c[4] = a.corr[16*i], a.corr[16*i+8]
		for j := 0; j < 4; j++ {
			d[j], d[4+j] = a.d[2*i], a.d[2*i+1]
		}
	}
}

// q8KActs holds m activation rows of k values quantized to Q8_K blocks of 256.
type q8KActs struct {
	m, k, nb int
	recKind  uint8     // which records rec holds since the last quantize: 0 none, recNatural, recPairs
	qs       []int8    // [m][k]
	d        []float32 // [m][nb]
	bsums    []int16   // [m][nb][16] sums of each 16 q's
	bsum8    []int16   // [m][nb][8] bsums[2j]+bsums[2j+1] (sums of each 32 q's)
	rec      []int8    // [m][nb][kRec] records of the VNNI Q4_K kernels (quant_vnni_k.go)
	// The AMX tiles' layout (quant_amxk.go), per 16 tokens and sub-block: Q4_K dx then Σx,
	// Q6_K dx then 32·Σx (int32 bits); the last partial tile's values padded with zero tokens.
	amx uint8     // layouts computed since the last quantize (readyAMXK4, ...)
	dt4 []float32 // [m/16 rounded up][k/32][32]
	dt6 []float32 // [m/16 rounded up][k/16][32]
	xa  []int8    // [16][k], when m is not a multiple of 16
}

var q8ActPool, q8KActPool sync.Pool

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func getQ8Acts(m, k int, corr bool) *q8Acts {
	a, _ := q8ActPool.Get().(*q8Acts)
	if a == nil {
		a = new(q8Acts)
	}
	a.m, a.k, a.nb = m, k, k/32
	a.qs = grow(a.qs, m*k)
	a.d = grow(a.d, m*a.nb)
	if corr {
		a.corr = grow(a.corr, m*a.nb*8)
	}
	return a
}

func getQ8KActs(m, k int) *q8KActs {
	a, _ := q8KActPool.Get().(*q8KActs)
	if a == nil {
		a = new(q8KActs)
	}
	a.m, a.k, a.nb = m, k, k/256
	a.qs = grow(a.qs, m*k)
	a.d = grow(a.d, m*a.nb)
	a.bsums = grow(a.bsums, m*a.nb*16)
	a.bsum8 = grow(a.bsum8, m*a.nb*8)
	return a
}

// quantizeQ8 fills a from x ([m][k]); rows are split across p when there are several.
func (a *q8Acts) quantize(p *Pool, x []float32, corr bool) {
	a.ready = 0
	if a.m == 1 { // a decode row: no closure to allocate
		a.quantizeRow(x, 0, corr)
		return
	}
	p.For(a.m, 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a.quantizeRow(x, i, corr)
		}
	})
}

// quantizeRow quantizes row i of x ([m][k]) into a.
func (a *q8Acts) quantizeRow(x []float32, i int, corr bool) {
	k, nb := a.k, a.nb
	qs := a.qs[i*k : (i+1)*k]
	d := a.d[i*nb : (i+1)*nb]
	quantRowQ8(x[i*k:(i+1)*k], qs, d)
	if corr {
		c := a.corr[i*nb*8 : (i+1)*nb*8]
		for b := 0; b < nb; b++ {
			c[b*8] = -8 * sumInt8x32(qs[b*32:b*32+32])
		}
	}
}

// quantize fills a from x ([m][k]); rows are split across p when there are several.
func (a *q8KActs) quantize(p *Pool, x []float32) {
	k, nb := a.k, a.nb
	a.recKind, a.amx = 0, 0
	row := func(i int) {
		quantRowQ8K(x[i*k:(i+1)*k], a.qs[i*k:(i+1)*k], a.d[i*nb:(i+1)*nb],
			a.bsums[i*nb*16:(i+1)*nb*16], a.bsum8[i*nb*8:(i+1)*nb*8])
	}
	if a.m == 1 {
		row(0)
		return
	}
	p.For(a.m, 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row(i)
		}
	})
}

// quantRowQ8 quantizes one row to blocks of 32 (the AVX2 kernel where available).
var quantRowQ8 = quantRowQ8Ref

// quantRowQ8Ref is the reference activation quantizer to blocks of 32: d = fp16(amax/127),
// q = round-half-even(x * (127/amax)) (0 when amax is 0).
func quantRowQ8Ref(x []float32, qs []int8, d []float32) {
	for b := range d {
		xb := x[b*32 : b*32+32]
		var amax float32
		for _, v := range xb {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax = a
			}
		}
		d[b] = tensor.F16ToF32(tensor.F32ToF16(amax / 127))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		q := qs[b*32 : b*32+32]
		for j, v := range xb {
			q[j] = int8(math.RoundToEven(float64(v * id)))
		}
	}
}

// quantRowQ8KRef quantizes one row to Q8_K blocks of 256: with max the value of largest
// magnitude (the first one on ties), iscale = -127/max, q = min(127, nearest(iscale*x)),
// d = 1/iscale; all zero when the block is zero. bsums are the sums of each 16 q's.
func quantRowQ8KRef(x []float32, qs []int8, d []float32, bsums, bsum8 []int16) {
	for b := range d {
		xb := x[b*256 : b*256+256]
		q := qs[b*256 : b*256+256]
		var amax, mx float32
		for _, v := range xb {
			if a := math.Float32frombits(math.Float32bits(v) &^ (1 << 31)); a > amax {
				amax, mx = a, v
			}
		}
		bs := bsums[b*16 : b*16+16]
		b8 := bsum8[b*8 : b*8+8]
		if amax == 0 {
			d[b] = 0
			clear(q)
			clear(bs)
			clear(b8)
			continue
		}
		iscale := -127 / mx
		for j, v := range xb {
			// Round half to even by the magic-number addition (exact for |v| < 2^22).
			n := int32(math.Float32bits(float32(iscale*v)+12582912)&0x7fffff) - 0x400000
			q[j] = int8(min(127, n))
		}
		for g := 0; g < 16; g++ {
			var s int16
			for _, v := range q[g*16 : g*16+16] {
				s += int16(v)
			}
			bs[g] = s
		}
		for j := 0; j < 8; j++ {
			b8[j] = bs[2*j] + bs[2*j+1]
		}
		d[b] = 1 / iscale
	}
}
