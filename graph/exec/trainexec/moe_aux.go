// This file runs moe_aux, the load-balancing loss of a moe router (graph/grad_moe.go), and its
// backward: weight·E·Σ_e f_e·P_e over the batch's rows, f_e the fraction of rows choosing e
// (a constant of the backward), P_e the mean score of e. The forward also keeps the unweighted
// loss for the trainer's log (AuxLoss).
package trainexec

import (
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// moeAuxState is a moe_aux node's routing and the fractions f_e, P_e of the last run.
type moeAuxState struct {
	r    *moeRouting
	f, P []float32
	wt   float32
}

func newMoEAux(n *graph.Node, router *graph.Value) *moeAuxState {
	rt := router.Type.Shape
	E, D := rt[0].N, rt[1].N
	return &moeAuxState{r: newMoERouting(n, E, 1, D), f: make([]float32, E), P: make([]float32, E),
		wt: float32(n.Attrs.Float("weight", 1))}
}

// run routes x's N rows and returns the unweighted loss E·Σ_e f_e·P_e.
func (a *moeAuxState) run(pool *kernels.Pool, x, router []float32, N int) float32 {
	r := a.r
	r.route(pool, x, router, N)
	E := r.e
	clear(a.P)
	for i := 0; i < N; i++ {
		for e, s := range r.logits[i*E : (i+1)*E] {
			a.P[e] += s
		}
	}
	var l float32
	for e := range a.f {
		a.f[e] = float32(r.count[e]) / float32(N)
		a.P[e] /= float32(N)
		l += a.f[e] * a.P[e]
	}
	return float32(E) * l
}

func (p *Program) moeAux(n *graph.Node) (func(), error) {
	x, router, out := n.Args[0], n.Args[1], n.Outs[0]
	a := newMoEAux(n, router)
	return func() {
		l := a.run(p.pool, p.cur(x), p.buf(router), p.N)
		p.auxSum += float64(l)
		p.auxN++
		p.buf(out)[0] = a.wt * l
	}, nil
}

func (p *Program) moeAuxGrad(n *graph.Node, f *fusion) (func(), error) {
	dl, x, router := n.Args[0], n.Args[1], n.Args[2]
	a := newMoEAux(n, router)
	var dlog []float32
	return func() {
		N, r := p.N, a.r
		E, D := r.e, r.d
		xv, rw := p.cur(x), p.buf(router)
		a.run(p.pool, xv, rw, N)
		dx, dr := p.gradDst(n.Outs[0], f), p.gradDst(n.Outs[1], f)
		c := p.buf(dl)[0] * a.wt * float32(E) / float32(N)
		dlog = grow(dlog, N*E)
		for i := 0; i < N; i++ {
			ds := dlog[i*E : (i+1)*E]
			for e := range ds {
				ds[e] = c * a.f[e]
			}
			scoresGrad(ds, r.logits[i*E:(i+1)*E], r.sigmoid)
		}
		p.pool.Gemm(N, D, E, kernels.Mat{Data: dlog, Stride: E}, kernels.Mat{Data: rw, Stride: D}, dx, D, true)
		p.pool.Gemm(E, D, N, kernels.Mat{Data: dlog, Stride: E, T: true}, kernels.Mat{Data: xv, Stride: D}, dr, D, true)
	}, nil
}

// AuxLoss is the mean over the moe layers of the unweighted load-balancing loss E·Σ_e f_e·P_e
// of the last Forward (experts_used when the load is even; 0 without moe_aux nodes).
func (p *Program) AuxLoss() float32 {
	if p.auxN == 0 {
		return 0
	}
	return float32(p.auxSum / float64(p.auxN))
}
