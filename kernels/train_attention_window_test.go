// The training attention with a window, soft-cap and query scalar against graph/ref's float64
// attention and its gradient, over lengths that cross several row blocks (trainAttnBlock)
// with windows shorter than a block, longer than one, and longer than the sequence; and the
// option-free call against TrainAttention, bit for bit.
package kernels_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// refAttention runs ref's attention over B sequences of T rows and its gradient for dy.
func refAttention(t *testing.T, s kernels.AttnShape, o kernels.TrainAttnOpts, q, k, v, dy []float32) (y, dq, dk, dv []float64) {
	t.Helper()
	n := s.B * s.T
	f32 := func(d ...int) graph.Type { return graph.T(tensor.F32, graph.Dims(d...)...) }
	b := graph.NewBuilder("attn")
	a := graph.Attrs{"layer": graph.Int(0), "heads": graph.Int(int64(s.H)), "kv_heads": graph.Int(int64(s.KVH)), "head_dim": graph.Int(int64(s.HD))}
	if o.Window > 0 {
		a["window"] = graph.Int(int64(o.Window))
	}
	if o.Softcap > 0 {
		a["softcap"] = graph.Float(float64(o.Softcap))
	}
	if o.Scale > 0 {
		a["scale"] = graph.Float(float64(o.Scale))
	}
	b.Input("pos", graph.T(tensor.I32, graph.D(n)))
	qw, kw, vw := b.Weight("q", f32(n, s.QD())), b.Weight("k", f32(n, s.KVD())), b.Weight("v", f32(n, s.KVD()))
	att := b.Op("attention", a, qw, kw, vw)
	loss := b.Op("sum_rows", graph.Attrs{"keep": graph.Int(0)}, b.Op("mul", nil, att, b.Weight("dy", f32(n, s.QD()))))
	b.Output(loss)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	gg, err := graph.Grad(g, loss, []*graph.Value{qw, kw, vw})
	if err != nil {
		t.Fatal(err)
	}
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(i % s.T)
	}
	vals := map[string]*ref.Tensor{"pos": ref.Ints([]int{n}, pos), "q": ref.FromF32([]int{n, s.QD()}, q),
		"k": ref.FromF32([]int{n, s.KVD()}, k), "v": ref.FromF32([]int{n, s.KVD()}, v), "dy": ref.FromF32([]int{n, s.QD()}, dy)}
	all, err := ref.RunAll(gg, vals)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ref.Run(gg, vals)
	if err != nil {
		t.Fatal(err)
	}
	return all[gg.Value(att.Name)].F, res[1].F, res[2].F, res[3].F
}

func relDiff(got []float32, want []float64) float64 {
	var d, m float64
	for i, w := range want {
		d = max(d, math.Abs(float64(got[i])-w))
		m = max(m, math.Abs(w))
	}
	if m == 0 { // window 1: every softmax has one entry, dq = dk = 0
		return d
	}
	return d / m
}

func TestTrainAttentionWindowMatchesRef(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := kernels.AttnShape{B: 2, T: 70, H: 4, KVH: 2, HD: 8}
	for _, o := range []kernels.TrainAttnOpts{
		{Window: 5}, {Window: 32}, {Window: 40, Softcap: 1.5}, {Window: 100}, {Softcap: 2},
		{Scale: 0.6}, {Window: 7, Softcap: 3, Scale: 0.5}, {Window: 1},
	} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			n := s.B * s.T
			rnd := func(m int) []float32 {
				x := make([]float32, m)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				return x
			}
			q, k, v, dy := rnd(n*s.QD()), rnd(n*s.KVD()), rnd(n*s.KVD()), rnd(n*s.QD())
			y, dq, dk, dv := refAttention(t, s, o, q, k, v, dy)
			out := make([]float32, n*s.QD())
			side := make([]float32, o.SideSize(s.B, s.H, s.T))
			kernels.TrainAttentionWindow(kernels.Default, out, side, q, k, v, s, o)
			gq, gk, gv := make([]float32, len(q)), make([]float32, len(k)), make([]float32, len(v))
			scratch := make([]float32, s.B*s.KVH*s.T*s.T)
			for i := range scratch {
				scratch[i] = float32(math.NaN()) // the kernel must not read what it did not write
			}
			kernels.TrainAttentionWindowGrad(kernels.Default, gq, gk, gv, dy, side, q, k, v, scratch, s, o)
			for _, c := range []struct {
				name string
				got  []float32
				want []float64
			}{{"out", out, y}, {"dq", gq, dq}, {"dk", gk, dk}, {"dv", gv, dv}} {
				if d := relDiff(c.got, c.want); !(d < 1e-5) {
					t.Errorf("%s: relative difference %.3g from the float64 reference", c.name, d)
				}
			}
		})
	}
}

func TestTrainAttentionWindowNoOptions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := kernels.AttnShape{B: 2, T: 45, H: 4, KVH: 2, HD: 8}
	n := s.B * s.T
	rnd := func(m int) []float32 {
		x := make([]float32, m)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	q, k, v, dy := rnd(n*s.QD()), rnd(n*s.KVD()), rnd(n*s.KVD()), rnd(n*s.QD())
	run := func(plain bool) [][]float32 {
		out, att := make([]float32, n*s.QD()), make([]float32, s.B*s.H*s.T*s.T)
		gq, gk, gv := make([]float32, len(q)), make([]float32, len(k)), make([]float32, len(v))
		scratch := make([]float32, s.B*s.KVH*s.T*s.T)
		if plain {
			kernels.TrainAttention(kernels.Default, out, att, q, k, v, s)
			kernels.TrainAttentionGrad(kernels.Default, gq, gk, gv, dy, att, q, k, v, scratch, s)
		} else {
			kernels.TrainAttentionWindow(kernels.Default, out, att, q, k, v, s, kernels.TrainAttnOpts{})
			kernels.TrainAttentionWindowGrad(kernels.Default, gq, gk, gv, dy, att, q, k, v, scratch, s, kernels.TrainAttnOpts{})
		}
		return [][]float32{out, gq, gk, gv}
	}
	a, b := run(true), run(false)
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("result %d [%d]: TrainAttention %v, TrainAttentionWindow %v", i, j, a[i][j], b[i][j])
			}
		}
	}
}
