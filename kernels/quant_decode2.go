// This file runs a Q8_0 or Q4_0 matmul of two to eight tokens as one-token decodes in one pass
// over the weight (Pool.MatMulDecodes): the stream split of the one-token decode (forStreamsN)
// with the T-token kernels (two tokens: q8_0Rows4T2 and q4_0Rows4T2 over four streams; three
// and four: q8_0Rows2T3 ... q4_0Rows2T4 over two; five to eight: four, then the rest, on the
// same rows chunk by chunk), which read each weight row once for all the tokens and give each
// (row, token) the one-token kernel's sum bit for bit. Rows outside a share's streams go
// through the one-row kernels of the same math, token by token.
package kernels

import (
	"sync"

	"github.com/llmcloud/llmcloud/tensor"
)

// rowsT[T] and q4RowsT[T] are the T-token decode kernels (T = 2: four streams, q8_0Rows4T2 and
// q4_0Rows4T2; T = 3, 4: two streams, q8_0Rows2T3 ... q4_0Rows2T4), where installed:
// decode2Eligible is false elsewhere.
var (
	rowsT   [5]rowsTFn
	q4RowsT [5]q4RowsTFn
	// rows2T[T] and q4Rows2T[T] are the two-stream kernels of one to four tokens, which run
	// five to eight tokens as four plus the rest (decode2.groupsSplit).
	rows2T   [5]rowsTFn
	q4Rows2T [5]q4RowsTFn
)

type (
	rowsTFn   = func(w **byte, adv int, nrows int, xs *int8, xd *float32, fz *float32, tstride int, nu int, out **float32, oadv int, ostride int)
	q4RowsTFn = func(w **byte, adv int, nrows int, xs *int8, xd *float32, corr *int32, tstride int, nu int, out **float32, oadv int, ostride int)
)

// maxDecodeTokens is the most tokens MatMulDecodes runs in one pass over the weight.
const maxDecodeTokens = 8

// splitChunk is how many row groups (two rows each) the two halves of a five-to-eight-token
// pass run in turn: the second half finds the rows in L1 or L2.
var splitChunk = 64

// tokenStreams is the weight streams per worker of the T-token kernels.
func tokenStreams(T int) int {
	if T == 2 {
		return 4
	}
	return 2
}

// decodeTKernels reports whether the kernels for T tokens are installed.
func decodeTKernels(T int) bool {
	if T >= 2 && T <= 4 {
		return rowsT[T] != nil
	}
	return T > 4 && T <= maxDecodeTokens && rows2T[4] != nil
}

// MatMulDecodes computes out = x · wᵀ for m tokens (x [m, k], out [m, n]) as m one-token
// matmuls: token t's row of out is bit for bit what MatMul with m = 1 gives for x's row t. With
// two to eight tokens on a Q8_0 or Q4_0 weight on the VNNI decode kernels the tokens run in one
// pass over the weight; otherwise one MatMul per token.
func (p *Pool) MatMulDecodes(out, x []float32, w *tensor.Tensor, m int) error {
	if decodeTKernels(m) && decode2Eligible(w) && w.Check() == nil && len(x) >= m*w.Shape[1] && len(out) >= m*w.Shape[0] {
		matmulDecodeT(p, out, x, w, m)
		return nil
	}
	if len(w.Shape) != 2 {
		return p.MatMul(out, x, w, m)
	}
	n, k := w.Shape[0], w.Shape[1]
	if m < 0 || len(x) < m*k || len(out) < m*n {
		return p.MatMul(out, x, w, m) // let MatMul report the problem
	}
	for t := 0; t < m; t++ {
		if err := p.MatMul(out[t*n:(t+1)*n], x[t*k:(t+1)*k], w, 1); err != nil {
			return err
		}
	}
	return nil
}

// decode2 is the streamWork of T tokens on one weight.
type decode2 struct {
	w     []byte
	rs, k int
	n     int // rows: token t's results at out[t*n:]
	T     int // tokens
	q4    bool
	a     *q8Acts
	out   []float32
	ptrs  []streamPtrs
}

var decode2Pool = sync.Pool{New: func() any { return &decode2{} }}

// decode2Eligible reports whether matmulDecodeT runs w ([n, k]) here: VNNI decode kernels, Q8_0
// rows of an even number of blocks or Q4_0 rows of a multiple of 4.
func decode2Eligible(w *tensor.Tensor) bool {
	if !gemvVNNI() || Reference || len(w.Shape) != 2 {
		return false
	}
	switch nb := w.Shape[1] / 32; w.Type {
	case tensor.Q8_0:
		return w.Shape[1]%64 == 0 && nb > 0 && useRows4
	case tensor.Q4_0:
		return w.Shape[1]%128 == 0 && nb > 0
	}
	return false
}

// matmulDecodeT computes out ([T][n]) = x ([T][k]) · wᵀ for a decode2Eligible weight.
func matmulDecodeT(p *Pool, out, x []float32, w *tensor.Tensor, T int) {
	n, k := w.Shape[0], w.Shape[1]
	q4 := w.Type == tensor.Q4_0
	a := getQ8Acts(T, k, q4)
	defer q8ActPool.Put(a)
	a.quantize(p, x, q4)
	if q4 {
		a.prepQuad()
	} else {
		a.prepZ(p, false)
	}
	rs, _ := w.Type.RowBytes(k)
	d := decode2Pool.Get().(*decode2)
	*d = decode2{w: w.Data, rs: rs, k: k, n: n, T: T, q4: q4, a: a, out: out, ptrs: grow(d.ptrs, p.Workers())}
	forStreamsN(p, n, tokenStreams(T), d)
	*d = decode2{ptrs: d.ptrs}
	decode2Pool.Put(d)
}

// groups computes row groups [g0, g1) of share sh for every token.
func (d *decode2) groups(part int, sh streamShare, g0, g1 int) {
	if d.T > 4 {
		d.groupsSplit(part, sh, g0, g1)
		return
	}
	ps, a, k := &d.ptrs[part], d.a, d.k
	for j := 0; j < tokenStreams(d.T); j++ {
		row := sh.lo + j*sh.s + g0
		ps.ws[j], ps.outs[j] = &d.w[row*d.rs], &d.out[row]
	}
	if d.q4 {
		q4RowsT[d.T](&ps.ws[0], d.rs, g1-g0, &a.x4[0], &a.d4[0], &a.c4[0], k, k/128, &ps.outs[0], 4, 4*d.n)
		return
	}
	rowsT[d.T](&ps.ws[0], d.rs, g1-g0, &a.qs[0], &a.dz[0], &a.fz[0], k, k/64, &ps.outs[0], 4, 4*d.n)
}

// groupsSplit computes row groups [g0, g1) of share sh for five to eight tokens: per chunk of
// splitChunk groups, tokens 0-3 with the four-token kernel, then tokens 4.. with the kernel of
// the rest, which reads the chunk's rows from the caches.
func (d *decode2) groupsSplit(part int, sh streamShare, g0, g1 int) {
	ps, a, k, n := &d.ptrs[part], d.a, d.k, d.n
	for c0 := g0; c0 < g1; c0 += splitChunk {
		c1 := min(c0+splitChunk, g1)
		for _, h := range [2]struct{ t0, T int }{{0, 4}, {4, d.T - 4}} {
			for j := 0; j < 2; j++ {
				row := sh.lo + j*sh.s + c0
				ps.ws[j], ps.outs[j] = &d.w[row*d.rs], &d.out[h.t0*n+row]
			}
			if d.q4 {
				q4Rows2T[h.T](&ps.ws[0], d.rs, c1-c0, &a.x4[h.t0*k], &a.d4[h.t0*k/8], &a.c4[h.t0*k/8], k, k/128, &ps.outs[0], 4, 4*n)
				continue
			}
			rows2T[h.T](&ps.ws[0], d.rs, c1-c0, &a.qs[h.t0*k], &a.dz[h.t0*k/4], &a.fz[h.t0*k/4], k, k/64, &ps.outs[0], 4, 4*n)
		}
	}
}

// rest computes rows [lo, hi) with the one-row kernels, token by token.
func (d *decode2) rest(_, lo, hi int) {
	a, k := d.a, d.k
	for t := 0; t < d.T; t++ {
		if d.q4 {
			rowsZ[1](&d.w[lo*d.rs], d.rs, hi-lo, &a.x4[t*k], &a.d4[t*k/8], &a.c4[t*k/8], k/128, &d.out[t*d.n+lo])
			continue
		}
		rows4ZTail(&d.w[lo*d.rs], d.rs, hi-lo, &a.qs[t*k], &a.dz[t*k/4], &a.fz[t*k/4], k/64, &d.out[t*d.n+lo])
	}
}
