// This file runs moe (graph/ops_moe.go) and its backward moe_grad (graph/grad_moe.go) with F32
// weights: every row's experts chosen on its own, then the rows grouped by expert so each
// expert's gate, up and down run as three Gemms over all its rows (the shared expert over all
// rows). The backward recomputes the routing and the experts' activations from x rather than
// keeping them (an MoE layer's activations are k times a dense one's); the top-k choice is
// the forward's, a constant of the backward.
package trainexec

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// moeRouting is one batch's routing of a moe layer, and the scratch its experts run in.
type moeRouting struct {
	e, f, d, k    int
	sigmoid, norm bool
	scale         float32
	logits        []float32 // [n,E]; then the scores (softmax or sigmoid)
	sel           []int     // [n*k] chosen experts, highest score first (ties: lower index)
	wts, sums     []float32 // [n*k] their weights; [n] the chosen scores' sums
	count, start  []int     // rows per expert; the first of each expert's (row, slot) in order
	order         []int     // row*k+slot grouped by expert, rows ascending
	fill          []int
	ffn           ffnScratch
}

func newMoERouting(n *graph.Node, e, f, d int) *moeRouting {
	return &moeRouting{e: e, f: f, d: d, k: int(n.Attrs.Int("experts_used", 0)),
		sigmoid: n.Attrs.Str("gating", graph.MoESoftmax) == graph.MoESigmoid, norm: n.Attrs.Int("norm", 0) != 0,
		scale: float32(n.Attrs.Float("scale", 1)), count: make([]int, e), start: make([]int, e+1), fill: make([]int, e)}
}

// route scores x's n rows against router, chooses each row's experts and groups the rows.
func (r *moeRouting) route(pool *kernels.Pool, x, router []float32, n int) {
	E, D, k := r.e, r.d, r.k
	r.logits, r.wts, r.sums = grow(r.logits, n*E), grow(r.wts, n*k), grow(r.sums, n)
	if cap(r.sel) < n*k {
		r.sel, r.order = make([]int, n*k), make([]int, n*k)
	}
	r.sel, r.order = r.sel[:n*k], r.order[:n*k]
	pool.Gemm(n, E, D, kernels.Mat{Data: x, Stride: D}, kernels.Mat{Data: router, Stride: D, T: true}, r.logits, E, false)
	clear(r.count)
	for i := 0; i < n; i++ {
		s := r.logits[i*E : (i+1)*E]
		moeScores(s, r.sigmoid)
		sel := r.sel[i*k : (i+1)*k]
		for j := range sel {
			best := -1
			for e, v := range s {
				if (best < 0 || v > s[best]) && !chosen(sel[:j], e) {
					best = e
				}
			}
			sel[j] = best
			r.count[best]++
		}
		var sum float32
		for _, e := range sel {
			sum += s[e]
		}
		r.sums[i] = sum
		for j, e := range sel {
			w := s[e]
			if r.norm {
				w /= sum
			}
			r.wts[i*k+j] = w * r.scale
		}
	}
	r.start[0] = 0
	for e := 0; e < E; e++ {
		r.start[e+1] = r.start[e] + r.count[e]
		r.fill[e] = r.start[e]
	}
	for i, e := range r.sel {
		r.order[r.fill[e]] = i
		r.fill[e]++
	}
}

func chosen(sel []int, e int) bool {
	for _, s := range sel {
		if s == e {
			return true
		}
	}
	return false
}

// moeScores turns a row of logits into its scores in place.
func moeScores(s []float32, sigmoid bool) {
	if sigmoid {
		for i, v := range s {
			s[i] = float32(1 / (1 + math.Exp(-float64(v))))
		}
		return
	}
	m := s[0]
	for _, v := range s {
		m = max(m, v)
	}
	var sum float64
	for i, v := range s {
		ev := math.Exp(float64(v - m))
		s[i] = float32(ev)
		sum += ev
	}
	for i := range s {
		s[i] = float32(float64(s[i]) / sum)
	}
}

// scoresGrad turns ds, the gradient of a row's scores s, into that of its logits, in place.
func scoresGrad(ds, s []float32, sigmoid bool) {
	if sigmoid {
		for e := range ds {
			ds[e] *= s[e] * (1 - s[e])
		}
		return
	}
	var dot float32
	for e := range ds {
		dot += ds[e] * s[e]
	}
	for e := range ds {
		ds[e] = s[e] * (ds[e] - dot)
	}
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// ffnScratch holds a block of m rows' SwiGLU feed-forward: gate and up pre-activations, the
// hidden rows and the output, and the backward's temporaries.
type ffnScratch struct{ xs, g, u, h, y, dy, dh, dx []float32 }

// forward computes y = down·(silu(gate·x) * up·x) for m rows xs ([F,D], [F,D], [D,F] weights).
func (s *ffnScratch) forward(pool *kernels.Pool, xs []float32, m, F, D int, gate, up, down []float32) {
	s.g, s.u, s.h, s.y = grow(s.g, m*F), grow(s.u, m*F), grow(s.h, m*F), grow(s.y, m*D)
	pool.Gemm(m, F, D, kernels.Mat{Data: xs, Stride: D}, kernels.Mat{Data: gate, Stride: D, T: true}, s.g, F, false)
	pool.Gemm(m, F, D, kernels.Mat{Data: xs, Stride: D}, kernels.Mat{Data: up, Stride: D, T: true}, s.u, F, false)
	kernels.TrainSwiGLU(pool, s.h, s.g, s.u, m, F)
	pool.Gemm(m, D, F, kernels.Mat{Data: s.h, Stride: F}, kernels.Mat{Data: down, Stride: F, T: true}, s.y, D, false)
}

// backward (after forward on the same rows) adds the weights' gradients for dy (s.dy, m rows)
// into dgate, dup, ddown and sets s.dx to the rows' input gradient.
func (s *ffnScratch) backward(pool *kernels.Pool, xs []float32, m, F, D int, gate, up, down, dgate, dup, ddown []float32) {
	s.dh, s.dx = grow(s.dh, m*F), grow(s.dx, m*D)
	dy := s.dy[:m*D]
	pool.Gemm(D, F, m, kernels.Mat{Data: dy, Stride: D, T: true}, kernels.Mat{Data: s.h, Stride: F}, ddown, F, true)
	pool.Gemm(m, F, D, kernels.Mat{Data: dy, Stride: D}, kernels.Mat{Data: down, Stride: F}, s.dh, F, false)
	// dg and du overwrite g and u (forward's values read first, element by element).
	for i, dh := range s.dh {
		g, u := s.g[i], s.u[i]
		sg := float32(1 / (1 + math.Exp(-float64(g))))
		s.g[i] = dh * u * sg * (1 + g*(1-sg))
		s.u[i] = dh * g * sg
	}
	dg, du := s.g, s.u
	pool.Gemm(F, D, m, kernels.Mat{Data: dg, Stride: F, T: true}, kernels.Mat{Data: xs, Stride: D}, dgate, D, true)
	pool.Gemm(F, D, m, kernels.Mat{Data: du, Stride: F, T: true}, kernels.Mat{Data: xs, Stride: D}, dup, D, true)
	pool.Gemm(m, D, F, kernels.Mat{Data: dg, Stride: F}, kernels.Mat{Data: gate, Stride: D}, s.dx, D, false)
	pool.Gemm(m, D, F, kernels.Mat{Data: du, Stride: F}, kernels.Mat{Data: up, Stride: D}, s.dx, D, true)
}

// gather copies the rows of expert e (order's (row, slot) entries) from x into s.xs.
func (r *moeRouting) gather(x []float32, e int) (rows []int, xs []float32) {
	D := r.d
	rows = r.order[r.start[e]:r.start[e+1]]
	xs = grow(r.ffn.xs, len(rows)*D)
	r.ffn.xs = xs
	for j, rs := range rows {
		i := rs / r.k
		copy(xs[j*D:(j+1)*D], x[i*D:(i+1)*D])
	}
	return rows, xs
}

// moeWeights are a moe node's F32 weights: router, the stacked experts, the shared expert.
type moeWeights struct {
	router, gate, up, down []float32
	shared                 [][]float32 // gate, up, down[, gate_inp] (nil: none)
	fs                     int
}

func (p *Program) moeWeights(args []*graph.Value) moeWeights {
	w := moeWeights{router: p.buf(args[1]), gate: p.buf(args[2]), up: p.buf(args[3]), down: p.buf(args[4])}
	for _, a := range args[5:] {
		w.shared = append(w.shared, p.buf(a))
	}
	if len(args) > 5 {
		w.fs = args[5].Type.Shape[0].N
	}
	return w
}

func (p *Program) moe(n *graph.Node) (func(), error) {
	if !graph.MoEPlain(n.Attrs) {
		return nil, fmt.Errorf("%s: the trainer has no moe with a selection bias, grouped top-k, expert biases or swiglu_oai", n.Name())
	}
	gt := n.Args[2].Type.Shape
	E, F, D := gt[0].N, gt[1].N, gt[2].N
	r := newMoERouting(n, E, F, D)
	var sh ffnScratch
	x, out := n.Args[0], n.Outs[0]
	return func() {
		N, k := p.N, r.k
		xv, o, w := p.cur(x), p.cur(out), p.moeWeights(n.Args)
		r.route(p.pool, xv, w.router, N)
		clear(o)
		for e := 0; e < E; e++ {
			if r.count[e] == 0 {
				continue
			}
			rows, xs := r.gather(xv, e)
			m := len(rows)
			r.ffn.forward(p.pool, xs, m, F, D, w.gate[e*F*D:(e+1)*F*D], w.up[e*F*D:(e+1)*F*D], w.down[e*D*F:(e+1)*D*F])
			for j, rs := range rows {
				i, wt := rs/k, r.wts[rs]
				y, dst := r.ffn.y[j*D:(j+1)*D], o[i*D:(i+1)*D]
				for c := range dst {
					dst[c] += wt * y[c]
				}
			}
		}
		if w.shared != nil {
			sh.forward(p.pool, xv, N, w.fs, D, w.shared[0], w.shared[1], w.shared[2])
			for i := 0; i < N; i++ {
				s := float32(1)
				if len(w.shared) == 4 {
					s = sigmoidDot(xv[i*D:(i+1)*D], w.shared[3])
				}
				y, dst := sh.y[i*D:(i+1)*D], o[i*D:(i+1)*D]
				for c := range dst {
					dst[c] += s * y[c]
				}
			}
		}
	}, nil
}

func sigmoidDot(a, b []float32) float32 {
	var d float64
	for i, v := range a {
		d += float64(v) * float64(b[i])
	}
	return float32(1 / (1 + math.Exp(-d)))
}

// gradDst is where a backward node's gradient output i goes: the weight's G when the fusion
// sinks it there, else the value's buffer, cleared.
func (p *Program) gradDst(o *graph.Value, f *fusion) []float32 {
	if s := f.sink[o]; s != nil {
		return s
	}
	d := p.cur(o)
	clear(d)
	return d
}

func (p *Program) moeGrad(n *graph.Node, f *fusion) (func(), error) {
	gt := n.Args[3].Type.Shape
	E, F, D := gt[0].N, gt[1].N, gt[2].N
	r := newMoERouting(n, E, F, D)
	var sh ffnScratch
	var dlog, dw []float32
	dy, x := n.Args[0], n.Args[1]
	return func() {
		N, k := p.N, r.k
		dyv, xv, w := p.cur(dy), p.cur(x), p.moeWeights(n.Args[1:])
		d := make([][]float32, len(n.Outs))
		for i, o := range n.Outs {
			d[i] = p.gradDst(o, f)
		}
		dx := d[0]
		r.route(p.pool, xv, w.router, N)
		dw = grow(dw, N*k)
		for e := 0; e < E; e++ {
			if r.count[e] == 0 {
				continue
			}
			rows, xs := r.gather(xv, e)
			m := len(rows)
			ge, ue, de := w.gate[e*F*D:(e+1)*F*D], w.up[e*F*D:(e+1)*F*D], w.down[e*D*F:(e+1)*D*F]
			r.ffn.forward(p.pool, xs, m, F, D, ge, ue, de)
			r.ffn.dy = grow(r.ffn.dy, m*D)
			for j, rs := range rows {
				i, wt := rs/k, r.wts[rs]
				g, y, dst := dyv[i*D:(i+1)*D], r.ffn.y[j*D:(j+1)*D], r.ffn.dy[j*D:(j+1)*D]
				var dot float32
				for c := range dst {
					dst[c] = wt * g[c]
					dot += g[c] * y[c]
				}
				dw[rs] = dot * r.scale
			}
			r.ffn.backward(p.pool, xs, m, F, D, ge, ue, de, d[2][e*F*D:(e+1)*F*D], d[3][e*F*D:(e+1)*F*D], d[4][e*D*F:(e+1)*D*F])
			for j, rs := range rows {
				i := rs / k
				src, dst := r.ffn.dx[j*D:(j+1)*D], dx[i*D:(i+1)*D]
				for c := range dst {
					dst[c] += src[c]
				}
			}
		}
		// The router: the chosen scores' gradient (through the renormalisation), then the logits'.
		dlog = grow(dlog, N*E)
		clear(dlog)
		for i := 0; i < N; i++ {
			s, ds := r.logits[i*E:(i+1)*E], dlog[i*E:(i+1)*E]
			var wdot float32
			for j, e := range r.sel[i*k : (i+1)*k] {
				wdot += dw[i*k+j] * s[e]
			}
			for j, e := range r.sel[i*k : (i+1)*k] {
				ds[e] = dw[i*k+j]
				if r.norm {
					ds[e] = (dw[i*k+j] - wdot/r.sums[i]) / r.sums[i]
				}
			}
			scoresGrad(ds, s, r.sigmoid)
		}
		p.pool.Gemm(N, D, E, kernels.Mat{Data: dlog, Stride: E}, kernels.Mat{Data: w.router, Stride: D}, dx, D, true)
		p.pool.Gemm(E, D, N, kernels.Mat{Data: dlog, Stride: E, T: true}, kernels.Mat{Data: xv, Stride: D}, d[1], D, true)
		if w.shared != nil {
			p.sharedGrad(&sh, xv, dyv, dx, w, d[5:], N, D)
		}
	}, nil
}

// sharedGrad adds the shared expert's backward for dy into dx and its gradients d.
func (p *Program) sharedGrad(sh *ffnScratch, xv, dyv, dx []float32, w moeWeights, d [][]float32, N, D int) {
	sh.forward(p.pool, xv, N, w.fs, D, w.shared[0], w.shared[1], w.shared[2])
	sh.dy = grow(sh.dy, N*D)
	copy(sh.dy, dyv[:N*D])
	if len(w.shared) == 4 {
		gi, dgi := w.shared[3], d[3]
		for i := 0; i < N; i++ {
			xr, g, y := xv[i*D:(i+1)*D], dyv[i*D:(i+1)*D], sh.y[i*D:(i+1)*D]
			s := sigmoidDot(xr, gi)
			var dot float32
			for c := range g {
				dot += g[c] * y[c]
				sh.dy[i*D+c] = s * g[c]
			}
			dl := dot * s * (1 - s)
			for c := range xr {
				dgi[c] += dl * xr[c]
				dx[i*D+c] += dl * gi[c]
			}
		}
	}
	sh.backward(p.pool, xv, N, w.fs, D, w.shared[0], w.shared[1], w.shared[2], d[0], d[1], d[2])
	kernels.Add(dx[:N*D], sh.dx)
}
