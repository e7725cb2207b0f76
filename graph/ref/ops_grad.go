// This file holds the reference backward ops (graph/ops_grad.go's semantics).
package ref

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
)

// rmsNormGrad returns dx and dw of <dy, rms_norm(x, w)>: per group of G with
// r = (mean(x²)+eps)^(-1/2), dx_j = r w_j dy_j - r³/G x_j Σ_k dy_k w_k x_k, dw_j = Σ dy_j x_j r.
func rmsNormGrad(dy, x, w *Tensor, eps float64) (*Tensor, *Tensor) {
	G := len(w.F)
	dx, dw := zerosF(x.Shape), zerosF(w.Shape)
	for g0 := 0; g0 < len(x.F); g0 += G {
		xs, ds := x.F[g0:g0+G], dy.F[g0:g0+G]
		var ss, dot float64
		for j, v := range xs {
			ss += v * v
			dot += ds[j] * w.F[j] * v
		}
		r := 1 / math.Sqrt(ss/float64(G)+eps)
		for j, v := range xs {
			dx.F[g0+j] = r*w.F[j]*ds[j] - r*r*r/float64(G)*v*dot
			dw.F[j] += ds[j] * v * r
		}
	}
	return dx, dw
}

func init() {
	opFuncs["matmul_dx"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		dy, w := t[0], t[1]
		N, K := w.Shape[0], w.Shape[1]
		dx := zerosF(rowsShape(dy, K))
		for r := 0; r < dy.Len()/N; r++ {
			for o := 0; o < N; o++ {
				d := dy.F[r*N+o]
				for k := 0; k < K; k++ {
					dx.F[r*K+k] += d * w.F[o*K+k]
				}
			}
		}
		return []*Tensor{dx}, nil
	}
	opFuncs["matmul_dw"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		dy, x := t[0], t[1]
		N, K := dy.Last(), x.Last()
		dw := zerosF([]int{N, K})
		for r := 0; r < dy.Len()/N; r++ {
			for o := 0; o < N; o++ {
				d := dy.F[r*N+o]
				for k := 0; k < K; k++ {
					dw.F[o*K+k] += d * x.F[r*K+k]
				}
			}
		}
		return []*Tensor{dw}, nil
	}
	opFuncs["embedding_grad"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		dy, ids, tab := t[0], t[1], t[2]
		V, D := tab.Shape[0], tab.Shape[1]
		d := zerosF(tab.Shape)
		for i, id := range ids.I {
			if id < 0 || int(id) >= V {
				return nil, fmt.Errorf("id %d at %d outside [0, %d)", id, i, V)
			}
			for j := 0; j < D; j++ {
				d.F[int(id)*D+j] += dy.F[i*D+j]
			}
		}
		return []*Tensor{d}, nil
	}
	opFuncs["rms_norm_grad"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		dx, dw := rmsNormGrad(t[0], t[1], t[2], a.Float("eps", 0))
		return []*Tensor{dx, dw}, nil
	}
	opFuncs["silu_grad"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{binary(t[0], t[1], func(d, x float64) float64 {
			s := sigmoid(x)
			return d * s * (1 + x*(1-s))
		})}, nil
	}
	opFuncs["softmax_grad"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		dy, y := t[0], t[1]
		dx, L := zerosF(y.Shape), y.Last()
		for r := 0; r < len(y.F); r += L {
			var dot float64
			for i := r; i < r+L; i++ {
				dot += dy.F[i] * y.F[i]
			}
			for i := r; i < r+L; i++ {
				dx.F[i] = y.F[i] * (dy.F[i] - dot)
			}
		}
		return []*Tensor{dx}, nil
	}
	opFuncs["softcap_grad"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		c := a.Float("cap", 0)
		return []*Tensor{binary(t[0], t[1], func(d, x float64) float64 {
			th := math.Tanh(x / c)
			return d * (1 - th*th)
		})}, nil
	}
	opFuncs["rope_grad"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		return one(rope(t, a, -1))
	}
	opFuncs["attention_grad"] = func(c *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		_, dq, dk, dv, err := attention(c, t[1], t[2], t[3], t[0], a)
		if err != nil {
			return nil, err
		}
		return []*Tensor{dq, dk, dv}, nil
	}
	opFuncs["gather_rows_grad"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		dy, idx, x := t[0], t[1], t[2]
		n, D := x.Shape[0], x.Shape[1]
		dx := zerosF(x.Shape)
		for i, r := range idx.I {
			if r < 0 || int(r) >= n {
				return nil, fmt.Errorf("row %d at %d outside [0, %d)", r, i, n)
			}
			for j := 0; j < D; j++ {
				dx.F[int(r)*D+j] += dy.F[i*D+j]
			}
		}
		return []*Tensor{dx}, nil
	}
	opFuncs["cross_entropy_grad"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		dl, z, tg := t[0].F[0], t[1], t[2]
		V := z.Shape[1]
		dz := zerosF(z.Shape)
		count := 0
		for _, target := range tg.I {
			if target >= 0 {
				count++
			}
		}
		for r, target := range tg.I {
			if target < 0 {
				continue
			}
			if int(target) >= V {
				return nil, fmt.Errorf("target %d at %d outside [0, %d)", target, r, V)
			}
			row := dz.F[r*V : (r+1)*V]
			softmaxRow(row, z.F[r*V:(r+1)*V])
			row[target]--
			for i := range row {
				row[i] *= dl / float64(count)
			}
		}
		return []*Tensor{dz}, nil
	}
	opFuncs["sum_rows"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		x, keep := t[0], int(a.Int("keep", 0))
		y := zerosF(x.Shape[len(x.Shape)-keep:])
		m := y.Len()
		for i, v := range x.F {
			y.F[i%m] += v
		}
		return []*Tensor{y}, nil
	}
	opFuncs["constant"] = func(_ *ctx, _ []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		y := zerosF(nil)
		y.F[0] = a.Float("value", 0)
		return []*Tensor{y}, nil
	}
	opFuncs["zeros"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{zerosF(t[0].Shape)}, nil
	}
}
