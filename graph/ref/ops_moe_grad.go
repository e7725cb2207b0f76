// This file holds the references of moe's backward and of its load-balancing loss
// (graph/grad_moe.go): every row on its own, in float64, the top-k choice a constant.
package ref

import (
	"github.com/llmcloud/llmcloud/graph"
)

// moeScores is a row's scores of the router logits: softmax or sigmoid, by the gating attribute.
func moeScores(logits []float64, a graph.Attrs) []float64 {
	s := make([]float64, len(logits))
	if a.Str("gating", graph.MoESoftmax) == graph.MoESigmoid {
		for i, v := range logits {
			s[i] = sigmoid(v)
		}
	} else {
		softmaxRow(s, logits)
	}
	return s
}

// scoresGrad turns the gradient ds of a row's scores s into the gradient of its logits.
func scoresGrad(ds, s []float64, a graph.Attrs) []float64 {
	dl := make([]float64, len(s))
	if a.Str("gating", graph.MoESoftmax) == graph.MoESigmoid {
		for e := range s {
			dl[e] = ds[e] * s[e] * (1 - s[e])
		}
		return dl
	}
	var dot float64
	for e := range s {
		dot += ds[e] * s[e]
	}
	for e := range s {
		dl[e] = s[e] * (ds[e] - dot)
	}
	return dl
}

// ffnGrad adds the backward of y = down·(silu(gate·x) * up·x) for dy into dx, dgate, dup,
// ddown (row-major [F,D], [F,D], [D,F] slices) and returns y.
func ffnGrad(x, dy, gate, up, down, dx, dgate, dup, ddown []float64, F, D int) []float64 {
	g, u, h := make([]float64, F), make([]float64, F), make([]float64, F)
	for j := 0; j < F; j++ {
		g[j], u[j] = dot(x, gate[j*D:(j+1)*D]), dot(x, up[j*D:(j+1)*D])
		h[j] = silu(g[j]) * u[j]
	}
	y := make([]float64, D)
	for o := 0; o < D; o++ {
		y[o] = dot(h, down[o*F:(o+1)*F])
	}
	if dy == nil {
		return y
	}
	for j := 0; j < F; j++ {
		var dh float64
		for o := 0; o < D; o++ {
			dh += dy[o] * down[o*F+j]
			ddown[o*F+j] += dy[o] * h[j]
		}
		sg := sigmoid(g[j])
		dg := dh * u[j] * sg * (1 + g[j]*(1-sg))
		du := dh * silu(g[j])
		for c := 0; c < D; c++ {
			dgate[j*D+c] += dg * x[c]
			dup[j*D+c] += du * x[c]
			dx[c] += dg*gate[j*D+c] + du*up[j*D+c]
		}
	}
	return y
}

func init() {
	opFuncs["moe_grad"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		dy, x, router, gate, up, down := t[0], t[1], t[2], t[3], t[4], t[5]
		E, F, D := gate.Shape[0], gate.Shape[1], gate.Shape[2]
		k := int(a.Int("experts_used", 0))
		scale, norm := a.Float("scale", 1), a.Int("norm", 0) != 0
		outs := make([]*Tensor, len(t)-1)
		for i, v := range t[1:] {
			outs[i] = zerosF(v.Shape)
		}
		dx, drouter, dgate, dup, ddown := outs[0], outs[1], outs[2], outs[3], outs[4]
		logits := make([]float64, E)
		dyw := make([]float64, D)
		for r := 0; r < x.Shape[0]; r++ {
			xr, dyr, dxr := x.F[r*D:(r+1)*D], dy.F[r*D:(r+1)*D], dx.F[r*D:(r+1)*D]
			for e := 0; e < E; e++ {
				logits[e] = dot(xr, router.F[e*D:(e+1)*D])
			}
			s := moeScores(logits, a)
			experts, weights := MoERoute(logits, k, a)
			dw := make([]float64, k)
			for i, e := range experts {
				for o := range dyw {
					dyw[o] = weights[i] * dyr[o]
				}
				w := func(m *Tensor, n int) []float64 { return m.F[e*n : (e+1)*n] }
				y := ffnGrad(xr, dyw, w(gate, F*D), w(up, F*D), w(down, D*F), dxr, w(dgate, F*D), w(dup, F*D), w(ddown, D*F), F, D)
				dw[i] = dot(dyr, y) * scale
			}
			// The chosen scores' gradient: through the renormalisation when norm is set.
			ds := make([]float64, E)
			var sum, wdot float64
			for i, e := range experts {
				sum += s[e]
				wdot += dw[i] * s[e]
			}
			for i, e := range experts {
				ds[e] = dw[i]
				if norm {
					ds[e] = (dw[i] - wdot/sum) / sum
				}
			}
			dl := scoresGrad(ds, s, a)
			for e := 0; e < E; e++ {
				for c := 0; c < D; c++ {
					dxr[c] += dl[e] * router.F[e*D+c]
					drouter.F[e*D+c] += dl[e] * xr[c]
				}
			}
			if len(t) >= 9 {
				sharedGrad(xr, dyr, dxr, t[6:], outs[5:], D)
			}
		}
		return outs, nil
	}
	opFuncs["moe_aux"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		l, _, _ := moeAux(t[0], t[1], a, false)
		return []*Tensor{l}, nil
	}
	opFuncs["moe_aux_grad"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		_, dx, drouter := moeAux(t[1], t[2], a, true)
		for i := range dx.F {
			dx.F[i] *= t[0].F[0]
		}
		for i := range drouter.F {
			drouter.F[i] *= t[0].F[0]
		}
		return []*Tensor{dx, drouter}, nil
	}
}

// sharedGrad adds the backward of the shared expert (w: gate, up, down[, gate_inp]) at row x
// for dy into dx and the gradients d (of w's shapes).
func sharedGrad(x, dy, dx []float64, w, d []*Tensor, D int) {
	F := w[0].Shape[0]
	if len(w) == 3 {
		ffnGrad(x, dy, w[0].F, w[1].F, w[2].F, dx, d[0].F, d[1].F, d[2].F, F, D)
		return
	}
	s := sigmoid(dot(x, w[3].F))
	y := ffnGrad(x, nil, w[0].F, w[1].F, w[2].F, nil, nil, nil, nil, F, D)
	dl := dot(dy, y) * s * (1 - s)
	for c := 0; c < D; c++ {
		d[3].F[c] += dl * x[c]
		dx[c] += dl * w[3].F[c]
	}
	dys := make([]float64, D)
	for o := range dys {
		dys[o] = s * dy[o]
	}
	ffnGrad(x, dys, w[0].F, w[1].F, w[2].F, dx, d[0].F, d[1].F, d[2].F, F, D)
}

// moeAux is weight·E·Σ_e f_e·P_e over x's rows and, with grad, its gradients for x and the
// router (the counts f_e constant).
func moeAux(x, router *Tensor, a graph.Attrs, grad bool) (l, dx, drouter *Tensor) {
	E, D := router.Shape[0], router.Shape[1]
	n, k := x.Shape[0], int(a.Int("experts_used", 0))
	wt := a.Float("weight", 1)
	f, P := make([]float64, E), make([]float64, E)
	scores := make([][]float64, n)
	logits := make([]float64, E)
	for r := 0; r < n; r++ {
		xr := x.F[r*D : (r+1)*D]
		for e := 0; e < E; e++ {
			logits[e] = dot(xr, router.F[e*D:(e+1)*D])
		}
		scores[r] = moeScores(logits, a)
		experts, _ := MoERoute(logits, k, a)
		for _, e := range experts {
			f[e] += 1 / float64(n)
		}
		for e, s := range scores[r] {
			P[e] += s / float64(n)
		}
	}
	l = zerosF(nil)
	for e := range f {
		l.F[0] += wt * float64(E) * f[e] * P[e]
	}
	if !grad {
		return l, nil, nil
	}
	dx, drouter = zerosF(x.Shape), zerosF(router.Shape)
	ds := make([]float64, E)
	for e := range ds {
		ds[e] = wt * float64(E) * f[e] / float64(n)
	}
	for r := 0; r < n; r++ {
		xr := x.F[r*D : (r+1)*D]
		dl := scoresGrad(ds, scores[r], a)
		for e := 0; e < E; e++ {
			for c := 0; c < D; c++ {
				dx.F[r*D+c] += dl[e] * router.F[e*D+c]
				drouter.F[e*D+c] += dl[e] * xr[c]
			}
		}
	}
	return l, dx, drouter
}
