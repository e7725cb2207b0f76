// This file holds the reference forward ops (graph/ops.go's semantics), fused ones included.
package ref

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

func one(t *Tensor, err error) ([]*Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*Tensor{t}, nil
}

func rowsShape(x *Tensor, last int) []int {
	s := append([]int(nil), x.Shape[:len(x.Shape)-1]...)
	return append(s, last)
}

// matmul: y[r,o] = Σ_k x[r,k] w[o,k].
func matmul(x, w *Tensor) *Tensor {
	N, K := w.Shape[0], w.Shape[1]
	y := zerosF(rowsShape(x, N))
	for r := 0; r < x.Len()/K; r++ {
		for o := 0; o < N; o++ {
			var s float64
			for k := 0; k < K; k++ {
				s += x.F[r*K+k] * w.F[o*K+k]
			}
			y.F[r*N+o] = s
		}
	}
	return y
}

// rmsNorm normalizes every group of len(w) values: x / sqrt(mean(x²) + eps) * w.
func rmsNorm(x, w *Tensor, eps float64) *Tensor {
	G := len(w.F)
	y := zerosF(x.Shape)
	for g0 := 0; g0 < len(x.F); g0 += G {
		xs := x.F[g0 : g0+G]
		var ss float64
		for _, v := range xs {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(G)+eps)
		for j, v := range xs {
			y.F[g0+j] = v * r * w.F[j]
		}
	}
	return y
}

// binary applies f with b broadcast over a's rows (b is a's shape or its trailing dims).
func binary(a, b *Tensor, f func(x, y float64) float64) *Tensor {
	y := zerosF(a.Shape)
	nb := len(b.F)
	for i, v := range a.F {
		y.F[i] = f(v, b.F[i%nb])
	}
	return y
}

func unary(x *Tensor, f func(float64) float64) *Tensor {
	y := zerosF(x.Shape)
	for i, v := range x.F {
		y.F[i] = f(v)
	}
	return y
}

func silu(v float64) float64    { return v / (1 + math.Exp(-v)) }
func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// logSumExp is log Σ exp(x_i), computed from the row maximum.
func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	var e float64
	for _, v := range x {
		e += math.Exp(v - m)
	}
	return m + math.Log(e)
}

// softmaxRow writes the softmax of x into y.
func softmaxRow(y, x []float64) {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	var s float64
	for i, v := range x {
		y[i] = math.Exp(v - m)
		s += y[i]
	}
	for i := range y {
		y[i] /= s
	}
}

// ropeTables returns, per row, the cos/sin table kernels.Rope.Table computes for its position.
func ropeTables(pos, freqs *Tensor, a graph.Attrs) (*kernels.Rope, [][]float32, error) {
	hd := int(a.Int("head_dim", 0))
	var f []float32
	if freqs != nil {
		f = freqs.Float32()
	}
	r, err := kernels.NewRope(hd, a.Float("theta", 0), a.Int("neox", 0) != 0, f)
	if err != nil {
		return nil, nil, err
	}
	r.Mscale = float32(a.Float("mscale", 1))
	r.FreqScale = float32(a.Float("freq_scale", 1))
	if cs := yarnTables(pos.I, a); cs != nil {
		return r, cs, nil
	}
	cs := make([][]float32, len(pos.I))
	for i, p := range pos.I {
		cs[i] = make([]float32, hd)
		r.Table(cs[i], int(p))
	}
	return r, cs, nil
}

// rope rotates each head's pairs by the row's angles; sign -1 rotates backwards (rope_grad).
func rope(args []*Tensor, a graph.Attrs, sign float64) (*Tensor, error) {
	x, pos := args[0], args[1]
	var freqs *Tensor
	if len(args) == 3 {
		freqs = args[2]
	}
	r, cs, err := ropeTables(pos, freqs, a)
	if err != nil {
		return nil, err
	}
	heads, hd := int(a.Int("heads", 0)), r.Dims
	half := hd / 2
	y := zerosF(x.Shape)
	copy(y.F, x.F)
	for row := range cs {
		for h := 0; h < heads; h++ {
			v := y.F[row*heads*hd+h*hd:]
			for i := 0; i < half; i++ {
				c, s := float64(cs[row][2*i]), sign*float64(cs[row][2*i+1])
				p, q := 2*i, 2*i+1
				if r.NeoX {
					p, q = i, i+half
				}
				x0, x1 := v[p], v[q]
				v[p], v[q] = x0*c-x1*s, x0*s+x1*c
			}
		}
	}
	return y, nil
}

func init() {
	opFuncs["embedding"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		tab, ids := t[0], t[1]
		V, D := tab.Shape[0], tab.Shape[1]
		y := zerosF(append(append([]int(nil), ids.Shape...), D))
		for i, id := range ids.I {
			if id < 0 || int(id) >= V {
				return nil, fmt.Errorf("id %d at %d outside [0, %d)", id, i, V)
			}
			copy(y.F[i*D:(i+1)*D], tab.F[int(id)*D:])
		}
		return []*Tensor{y}, nil
	}
	opFuncs["matmul"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{matmul(t[0], t[1])}, nil
	}
	opFuncs["matmul_multi"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		var out []*Tensor
		for _, w := range t[1:] {
			out = append(out, matmul(t[0], w))
		}
		return out, nil
	}
	opFuncs["rms_norm"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{rmsNorm(t[0], t[1], a.Float("eps", 0))}, nil
	}
	opFuncs["add_rms_norm"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		s := binary(t[0], t[1], func(x, y float64) float64 { return x + y })
		return []*Tensor{s, rmsNorm(s, t[2], a.Float("eps", 0))}, nil
	}
	opFuncs["add"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{binary(t[0], t[1], func(x, y float64) float64 { return x + y })}, nil
	}
	opFuncs["mul"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{binary(t[0], t[1], func(x, y float64) float64 { return x * y })}, nil
	}
	opFuncs["silu"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{unary(t[0], silu)}, nil
	}
	opFuncs["swiglu"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{binary(t[0], t[1], func(g, u float64) float64 { return silu(g) * u })}, nil
	}
	opFuncs["softmax"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		x := t[0]
		y, L := zerosF(x.Shape), x.Last()
		for r := 0; r < len(x.F); r += L {
			softmaxRow(y.F[r:r+L], x.F[r:r+L])
		}
		return []*Tensor{y}, nil
	}
	opFuncs["scale"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		by := a.Float("by", 0)
		return []*Tensor{unary(t[0], func(v float64) float64 { return v * by })}, nil
	}
	opFuncs["dropout"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		// Training's dropout with seed and key 0: a fixed mask (graph.DropoutKeep).
		p, salt := a.Float("p", 0), uint64(a.Int("salt", 0))
		x := t[0]
		y := zerosF(x.Shape)
		for i, v := range x.F {
			if graph.DropoutKeep(0, 0, salt, i, p) {
				y.F[i] = v / (1 - p)
			}
		}
		return []*Tensor{y}, nil
	}
	opFuncs["softcap"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		c := a.Float("cap", 0)
		return []*Tensor{unary(t[0], func(v float64) float64 { return c * math.Tanh(v/c) })}, nil
	}
	opFuncs["rope"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		return one(rope(t, a, 1))
	}
	opFuncs["attention"] = func(c *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		if len(t) == 4 {
			y, err := attentionSinks(c, t[0], t[1], t[2], t[3], a)
			return one(y, err)
		}
		y, _, _, _, err := attention(c, t[0], t[1], t[2], nil, a)
		return one(y, err)
	}
	opFuncs["gather_rows"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		x, idx := t[0], t[1]
		n, D := x.Shape[0], x.Shape[1]
		y := zerosF([]int{len(idx.I), D})
		for i, r := range idx.I {
			if r < 0 || int(r) >= n {
				return nil, fmt.Errorf("row %d at %d outside [0, %d)", r, i, n)
			}
			copy(y.F[i*D:(i+1)*D], x.F[int(r)*D:])
		}
		return []*Tensor{y}, nil
	}
	opFuncs["cross_entropy"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		z, tg := t[0], t[1]
		V := z.Shape[1]
		var sum float64
		count := 0
		for r, target := range tg.I {
			if target < 0 {
				continue
			}
			if int(target) >= V {
				return nil, fmt.Errorf("target %d at %d outside [0, %d)", target, r, V)
			}
			row := z.F[r*V : (r+1)*V]
			sum += logSumExp(row) - row[target] // -log softmax(row)[target]
			count++
		}
		loss := zerosF(nil)
		if count > 0 {
			loss.F[0] = sum / float64(count)
		}
		return []*Tensor{loss}, nil
	}
}
