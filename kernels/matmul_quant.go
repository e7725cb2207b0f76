// This file dispatches matmuls with block-quantized weights (Q8_0, Q4_0, Q4_K, Q6_K) to the
// integer kernels: the activations are quantized once per call (to blocks of 32 for Q8_0/Q4_0,
// to Q8_K for Q4_K/Q6_K, as llama.cpp does), then integer dot products per block are scaled and
// accumulated in float32. Decode (m == 1) runs a GEMV kernel row by row; prefill (m > 1) runs
// 2-row x 4-token tiles over chunks of tokens that stay in L2. Row ranges are split across the
// pool. See docs/kernels-quant.md.
package kernels

import (
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// quantTiles[q4][R][T] is the R-row x T-token tile kernel (q4: Q4_0 weights, else Q8_0).
// Shapes used: 8x1 and 4x1 (GEMV), 2x1..2x4, 1x1..1x4 (tails).
var quantTiles [2][9][5]tileFunc

// dotQ4K and dotQ6K are the one-row, one-token K-quant dot kernels.
var (
	dotQ4K = func(w *byte, xq *int8, xd *float32, bsum8 *int16, nb int) float32 {
		return dotQ4KRef(unsafe.Slice(w, nb*144), unsafe.Slice(xq, nb*256), unsafe.Slice(xd, nb), unsafe.Slice(bsum8, nb*8), nb)
	}
	dotQ6K = func(w *byte, xq *int8, xd *float32, bsums *int16, nb int) float32 {
		return dotQ6KRef(unsafe.Slice(w, nb*210), unsafe.Slice(xq, nb*256), unsafe.Slice(xd, nb), unsafe.Slice(bsums, nb*16), nb)
	}
)

// q8Rows is the sequential Q8_0 decode kernel (q8_0Rows; see q8RowsRef).
var q8Rows = func(w *byte, rs int, nrows int, xq *int8, xd *float32, nb int, out *float32) {
	q8RowsRef(unsafe.Slice(w, (nrows-1)*rs+nb*34), rs, nrows, unsafe.Slice(xq, nb*32),
		unsafe.Slice(xd, nb), nb, unsafe.Slice(out, nrows))
}

// quantAsm reports whether the AVX2 assembly kernels are installed.
var quantAsm bool

func init() {
	for q := 0; q < 2; q++ {
		for r := 1; r <= 8; r++ {
			for t := 1; t <= 4; t++ {
				quantTiles[q][r][t] = refTile(q == 1, r, t)
				if r <= 4 {
					tilesZ[q][r][t] = refTileZ(q == 1, r, t)
				}
			}
		}
	}
	for t := 1; t <= 8; t++ {
		tilesKZ[0][t], tilesKZ[1][t] = refTileKZ(false, t), refTileKZ(true, t)
	}
	useQuantAsm()
}

// gemvRows is the number of weight rows the decode kernel reads at once (1, 2, 4 or 8).
// Reading rows one after another (one sequential stream per worker) measured fastest from DRAM
// on the Zen 1 box (Q8_0 5632x2048, 2 threads, one interleaved A/B run: 1 row 12.9-14.2 GB/s,
// 8 rows 8.1-8.7, 4 rows 7.9-9.0), although 4-8 rows at once are faster in L1.
var gemvRows = 1

// tokenChunk is the number of activation rows processed against each weight row pair before
// moving on, chosen so the quantized activations (about 2.2 bytes per value) stay in L2.
func tokenChunk(k int) int {
	c := (192 << 10) / (k*9/4 + 1)
	return max(4, c&^3)
}

// matmulQuant computes out = x · wᵀ for a quantized w ([n, k]; x is [m, k], out is [m, n]) and
// reports whether it did; false sends the call to the reference path.
func matmulQuant(p *Pool, out, x []float32, w *tensor.Tensor, m, n, k int) bool {
	switch w.Type {
	case tensor.Q8_0, tensor.Q4_0:
		matmulQ8(p, out, x, w.Data, w.Type == tensor.Q4_0, m, n, k)
	case tensor.Q4_K, tensor.Q6_K:
		matmulK(p, out, x, w.Data, w.Type == tensor.Q6_K, m, n, k)
	case tensor.MXFP4:
		matmulMXFP4(p, out, x, w.Data, m, n, k)
	default:
		return false
	}
	return true
}

// matmulQ8 is the Q8_0 / Q4_0 matmul.
func matmulQ8(p *Pool, out, x []float32, w []byte, q4 bool, m, n, k int) {
	a := getQ8Acts(m, k, q4)
	defer q8ActPool.Put(a)
	a.quantize(p, x, q4)
	matmulQ8Acts(p, out, a, w, q4, m, n, k)
}

// matmulQ8Acts is the Q8_0 / Q4_0 matmul on activations quantized already (a; with the Q4_0
// corrections when q4).
func matmulQ8Acts(p *Pool, out []float32, a *q8Acts, w []byte, q4 bool, m, n, k int) {
	nb := k / 32
	bb := 34
	if q4 {
		bb = 18
	}
	rs := nb * bb
	var corr []int32
	if q4 {
		corr = a.corr
	}
	qi := 0
	if q4 {
		qi = 1
	}
	if m > 1 {
		if pk := packedAMX(p, w, q4, m, n, k); pk != nil {
			matmulAMX(p, out, a, pk, q4, m, n, k)
			return
		}
	}
	if q4 && m > 1 {
		if pk := packedI16(p, w, n, k); pk != nil {
			matmulI16(p, out, a, pk, m, n, k)
			return
		}
	}
	if quantVNNI && nb%2 == 0 && m > 1 {
		matmulZ(p, out, a, w, q4, m, n, k)
		return
	}
	if m > 1 {
		if pk := packedQ8(p, w, q4, n, k); pk != nil {
			matmulPacked(p, out, a, pk, q4, m, n, k)
			return
		}
	}
	if q4 && useX4(nb) && m > 1 {
		matmulQ4X(p, out, a, w, m, n, k)
		return
	}
	if q4 && useQuads4(nb) && m > 1 {
		matmulQ4Quads(p, out, a, w, m, n, k)
		return
	}
	if q4 && usePairs() && nb%2 == 0 && m > 1 {
		matmulP(p, out, a, w, m, n, k)
		return
	}
	if !q4 && useH8(nb) && m > 1 {
		matmulQ8H(p, out, a, w, m, n, k)
		return
	}
	if !q4 && usePairs8() && nb%2 == 0 && m > 1 {
		matmulP8(p, out, a, w, m, n, k)
		return
	}
	if m == 1 && gemvRows == 1 {
		dt := tensor.Q8_0
		if q4 {
			dt = tensor.Q4_0
		}
		sp := getGemvSegs()
		*sp = append(*sp, gemvSeg{out: out, w: w, dt: dt, n: n, k: k})
		gemvSegs(p, *sp, a, nil)
		putGemvSegs(sp)
		return
	}
	tiles := &quantTiles[qi]
	// tile runs an R x T tile at weight row r, token t.
	tile := func(R, T, r, t int) {
		var cp *int32
		if corr != nil {
			cp = &corr[t*nb*8]
		}
		tiles[R][T](&w[r*rs], rs, &a.qs[t*k], k, &a.d[t*nb], cp, nb, &out[t*n+r], n)
	}
	if m == 1 {
		g := gemvRows
		p.For((n+g-1)/g, 64/g, func(lo, hi int) {
			r, end := g*lo, min(g*hi, n)
			for ; r+g <= end; r += g {
				tile(g, 1, r, 0)
			}
			for ; r+4 <= end && g > 4; r += 4 {
				tile(4, 1, r, 0)
			}
			for ; r < end; r++ {
				tile(1, 1, r, 0)
			}
		})
		return
	}
	tc := tokenChunk(k)
	p.For((n+1)/2, 8, func(lo, hi int) {
		r0, r1 := 2*lo, min(2*hi, n)
		for t0 := 0; t0 < m; t0 += tc {
			t1 := min(t0+tc, m)
			for r := r0; r < r1; r += 2 {
				R := min(2, r1-r)
				t := t0
				for ; t+4 <= t1; t += 4 {
					tile(R, 4, r, t)
				}
				if t < t1 {
					tile(R, t1-t, r, t)
				}
			}
		}
	})
}

// matmulK is the Q4_K / Q6_K matmul.
func matmulK(p *Pool, out, x []float32, w []byte, q6 bool, m, n, k int) {
	a := getQ8KActs(m, k)
	defer q8KActPool.Put(a)
	a.quantize(p, x)
	matmulKActs(p, out, a, w, q6, m, n, k)
}

// matmulKActs is the Q4_K / Q6_K matmul on activations quantized to Q8_K already (a).
func matmulKActs(p *Pool, out []float32, a *q8KActs, w []byte, q6 bool, m, n, k int) {
	nb := k / 256
	bb := 144
	if q6 {
		bb = 210
	}
	rs := nb * bb
	if amxKOn() && m > 1 { // every m >= 2, so that a token's result does not depend on m
		matmulAMXK(p, out, a, w, q6, m, n, k)
		return
	}
	if quantVNNI && m > 1 {
		matmulKZ(p, out, a, w, q6, m, n, k)
		return
	}
	if kTileA() && m > 1 {
		matmulKA(p, out, a, w, q6, m, n, k)
		return
	}
	if m == 1 {
		dt := tensor.Q4_K
		if q6 {
			dt = tensor.Q6_K
		}
		gemvSegs(p, []gemvSeg{{out: out, w: w, dt: dt, n: n, k: k}}, nil, a)
		return
	}
	tc := tokenChunk(k)
	p.For(n, 8, func(lo, hi int) {
		for t0 := 0; t0 < m; t0 += tc {
			t1 := min(t0+tc, m)
			for r := lo; r < hi; r++ {
				wr := &w[r*rs]
				for t := t0; t < t1; t++ {
					if q6 {
						out[t*n+r] = dotQ6K(wr, &a.qs[t*k], &a.d[t*nb], &a.bsums[t*nb*16], nb)
					} else {
						out[t*n+r] = dotQ4K(wr, &a.qs[t*k], &a.d[t*nb], &a.bsum8[t*nb*8], nb)
					}
				}
			}
		}
	})
}
