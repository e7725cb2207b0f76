// Tests of every op's backward rule against central finite differences in float64 through
// ref: each case applies one op to random operands of random small shapes, the loss is Σ_outputs Σ out * R (R random
// and fixed), and every element of every float operand's gradient from graph.Grad, run by
// ref, must equal (L(w+h) - L(w-h)) / 2h within 1e-6 relative (max abs diff / max abs).
package ref_test

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/tensor"
)

// opCase builds its op's graph: float operands are weights (differentiated unless their name
// starts with "c_"), integer operands inputs whose values are ints.
type opCase struct {
	name  string
	ints  map[string][]int32
	build func(b *graph.Builder) []*graph.Value
}

func f32(dims ...int) graph.Type { return graph.T(tensor.F32, graph.Dims(dims...)...) }
func i32(n int) graph.Type       { return graph.T(tensor.I32, graph.D(n)) }

// opCases are the cases of one round, their shapes drawn from r: rows, inner sizes, heads,
// head sizes and the sequences of a batch all vary from round to round.
func opCases(r *rand.Rand) []opCase {
	in := func(lo, hi int) int { return lo + r.Intn(hi-lo+1) }
	R, K, N := in(1, 4), in(2, 6), in(1, 5) // K >= 2: a softmax over one value has no gradient
	un := func(op string, attrs graph.Attrs) opCase {
		return opCase{name: op, build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op(op, attrs, b.Weight("x", f32(R, K)))}
		}}
	}
	bin := func(op string, bshape ...int) opCase {
		return opCase{name: fmt.Sprintf("%s%v", op, bshape), build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op(op, nil, b.Weight("a", f32(2, R, K)), b.Weight("b", f32(bshape...)))}
		}}
	}
	// seqs is the pos input of n rows laid out as random sequences.
	seqs := func(n int) []int32 {
		pos := make([]int32, n)
		for i := 1; i < n; i++ {
			if r.Intn(4) > 0 {
				pos[i] = pos[i-1] + 1
			}
		}
		return pos
	}
	ropeCase := func(neox int64, freqs bool, freqScale ...float64) opCase {
		n, heads, hd := in(1, 6), in(1, 3), 2*in(1, 4)
		pos := seqs(n)
		pos[n-1] += 5 // a position past the batch's rows
		return opCase{name: fmt.Sprintf("rope neox=%d freqs=%v freq_scale=%v", neox, freqs, freqScale), ints: map[string][]int32{"pos": pos},
			build: func(b *graph.Builder) []*graph.Value {
				a := graph.Attrs{"heads": graph.Int(int64(heads)), "head_dim": graph.Int(int64(hd)), "theta": graph.Float(100), "neox": graph.Int(neox)}
				if len(freqScale) > 0 { // linear scaling (Gemma 3's global layers)
					a["freq_scale"] = graph.Float(freqScale[0])
				}
				args := []*graph.Value{b.Weight("x", f32(n, heads*hd)), b.Input("pos", i32(n))}
				if freqs {
					args = append(args, b.Weight("c_freqs", f32(hd/2)))
				}
				return []*graph.Value{b.Op("rope", a, args...)}
			}}
	}
	attn := func(window int64, softcap float64, scale ...float64) opCase {
		n, kvh, grp, hd := in(1, 9), in(1, 2), in(1, 3), in(1, 4)
		h := kvh * grp
		pos := seqs(n)
		if len(scale) > 0 { // one sequence of at least 3 rows: the window cuts it
			n = max(n, 3)
			pos = make([]int32, n)
			for i := range pos {
				pos[i] = int32(i)
			}
		}
		return opCase{name: fmt.Sprintf("attention window=%d softcap=%g scale=%v", window, softcap, scale),
			ints: map[string][]int32{"pos": pos},
			build: func(b *graph.Builder) []*graph.Value {
				a := graph.Attrs{"layer": graph.Int(0), "heads": graph.Int(int64(h)), "kv_heads": graph.Int(int64(kvh)), "head_dim": graph.Int(int64(hd))}
				if window > 0 {
					a["window"] = graph.Int(window)
				}
				if softcap > 0 {
					a["softcap"] = graph.Float(softcap)
				}
				if len(scale) > 0 {
					a["scale"] = graph.Float(scale[0])
				}
				b.Input("pos", i32(n))
				return []*graph.Value{b.Op("attention", a, b.Weight("q", f32(n, h*hd)), b.Weight("k", f32(n, kvh*hd)), b.Weight("v", f32(n, kvh*hd)))}
			}}
	}
	ids := func(n, v int) []int32 {
		x := make([]int32, n)
		for i := range x {
			x[i] = int32(r.Intn(v))
		}
		return x
	}
	eps := graph.Attrs{"eps": graph.Float(1e-5)}
	G, V, S := in(1, 4), in(2, 7), in(1, 6)
	D := G * in(1, 3)
	targets := ids(S, V)
	if S > 1 {
		targets[r.Intn(S)] = -1 // an ignored row
	}
	cases := append([]opCase{
		{name: "matmul", build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("matmul", nil, b.Weight("x", f32(2, R, K)), b.Weight("w", f32(N, K)))}
		}},
		{name: "matmul_multi", build: func(b *graph.Builder) []*graph.Value {
			return b.OpN("matmul_multi", nil, []*graph.Value{b.Weight("x", f32(R, K)), b.Weight("w1", f32(N, K)), b.Weight("w2", f32(2, K))})
		}},
		{name: "embedding", ints: map[string][]int32{"ids": ids(S, V)}, build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("embedding", nil, b.Weight("table", f32(V, K)), b.Input("ids", i32(S)))}
		}},
		{name: "gather_rows", ints: map[string][]int32{"idx": ids(S, R)}, build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("gather_rows", nil, b.Weight("x", f32(R, K)), b.Input("idx", i32(S)))}
		}},
		{name: "rms_norm", build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("rms_norm", eps, b.Weight("x", f32(R, D)), b.Weight("w", f32(D)))}
		}},
		{name: "rms_norm per head", build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("rms_norm", eps, b.Weight("x", f32(R, D)), b.Weight("w", f32(G)))}
		}},
		{name: "add_rms_norm", build: func(b *graph.Builder) []*graph.Value {
			return b.OpN("add_rms_norm", eps, []*graph.Value{b.Weight("x", f32(R, D)), b.Weight("y", f32(R, D)), b.Weight("w", f32(D))})
		}},
		bin("add", 2, R, K), bin("add", K), bin("add", R, K), bin("mul", 2, R, K), bin("mul", K),
		{name: "mul x*x", build: func(b *graph.Builder) []*graph.Value {
			x := b.Weight("x", f32(R, K))
			return []*graph.Value{b.Op("mul", nil, x, x), b.Op("add", nil, x, x)}
		}},
		un("silu", nil), un("softmax", nil), un("scale", graph.Attrs{"by": graph.Float(-1.5)}),
		un("dropout", graph.Attrs{"p": graph.Float(0.4), "salt": graph.Int(3)}),
		un("softcap", graph.Attrs{"cap": graph.Float(1.5)}), un("sum_rows", graph.Attrs{"keep": graph.Int(1)}),
		un("sum_rows", graph.Attrs{"keep": graph.Int(0)}),
		{name: "swiglu", build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("swiglu", nil, b.Weight("g", f32(R, K)), b.Weight("u", f32(R, K)))}
		}},
		ropeCase(0, false), ropeCase(1, false), ropeCase(0, true), ropeCase(1, true),
		attn(0, 0), attn(2, 0), attn(0, 2), attn(3, 1.5), attn(2, 1.5, 0.3),
		un("gelu", nil),
		{name: "geglu", build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("geglu", nil, b.Weight("g", f32(R, K)), b.Weight("u", f32(R, K)))}
		}},
		{name: "cross_entropy", ints: map[string][]int32{"t": targets}, build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("cross_entropy", nil, b.Weight("z", f32(S, V)), b.Input("t", i32(S)))}
		}},
	}, append(commCases(r), moeCases(r)...)...)
	// Last, so that the shapes the cases above draw stay those they always drew.
	cases = append(cases, ropeCase(1, false, 0.25)) // linear RoPE scaling (Gemma 3's global layers)
	cases = append(cases, splitCases(r)...)
	return cases
}

// lossGraph appends loss = Σ_i sum(out_i * R_i) to the case's graph.
func lossGraph(t *testing.T, c opCase) (*graph.Graph, []*graph.Value) {
	b := graph.NewBuilder("op")
	outs := c.build(b)
	var loss *graph.Value
	for i, o := range outs {
		dims := make([]int, len(o.Type.Shape))
		for j, d := range o.Type.Shape {
			dims[j] = d.N
		}
		r := b.Weight(fmt.Sprintf("c_r%d", i), f32(dims...))
		l := b.Op("sum_rows", graph.Attrs{"keep": graph.Int(0)}, b.Op("mul", nil, o, r))
		if loss == nil {
			loss = l
		} else {
			loss = b.Op("add", nil, loss, l)
		}
	}
	b.Output(loss)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var wrt []*graph.Value
	for _, w := range g.Weights {
		if !strings.HasPrefix(w.Name, "c_") {
			wrt = append(wrt, w)
		}
	}
	return g, wrt
}

// checkFD compares the gradients of Grad(g) run by ref with central differences of g's loss
// for the elements of each wrt value that pick chooses (given the value's gradient); it returns
// the worst relative error.
func checkFD(t *testing.T, g *graph.Graph, wrt []*graph.Value, vals map[string]*ref.Tensor, h float64, pick func(name string, grad []float64) []int) float64 {
	t.Helper()
	gg, err := graph.Grad(g, g.Outputs[0], wrt)
	if err != nil {
		t.Fatal(err)
	}
	back, err := graph.Parse(graph.String(gg))
	if err != nil || graph.String(back) != graph.String(gg) {
		t.Fatalf("backward graph does not round-trip through its text: %v", err)
	}
	res, err := ref.Run(gg, vals)
	if err != nil {
		t.Fatal(err)
	}
	lossAt := func() float64 {
		out, err := ref.Run(g, vals)
		if err != nil {
			t.Fatal(err)
		}
		return out[0].F[0]
	}
	if l := lossAt(); math.Abs(l-res[0].F[0]) > 1e-12*math.Max(1, math.Abs(l)) {
		t.Errorf("loss of the backward graph %v, forward %v", res[0].F[0], l)
	}
	worst := 0.0
	for i, w := range wrt {
		grad, x := res[i+1].F, vals[w.Name].F
		var maxAbs, maxDiff float64
		for _, j := range pick(w.Name, grad) {
			old := x[j]
			x[j] = old + h
			lp := lossAt()
			x[j] = old - h
			lm := lossAt()
			x[j] = old
			fd := (lp - lm) / (2 * h)
			maxAbs = math.Max(maxAbs, math.Max(math.Abs(fd), math.Abs(grad[j])))
			maxDiff = math.Max(maxDiff, math.Abs(fd-grad[j]))
		}
		rel := maxDiff / math.Max(maxAbs, 1e-3)
		worst = math.Max(worst, rel)
		if rel > 1e-6 || maxAbs == 0 {
			t.Errorf("d loss/d %s: max |grad| %.3g, max diff from finite differences %.3g (relative %.3g)", w.Name, maxAbs, maxDiff, rel)
		}
	}
	return worst
}

func randValues(g *graph.Graph, ints map[string][]int32, seed int64) map[string]*ref.Tensor {
	r := rand.New(rand.NewSource(seed))
	vals := map[string]*ref.Tensor{}
	for _, w := range g.Weights {
		n, _ := w.Type.Shape.Elems(nil)
		data := make([]float64, n)
		for i := range data {
			data[i] = r.NormFloat64()
		}
		dims := make([]int, len(w.Type.Shape))
		for j, d := range w.Type.Shape {
			dims[j] = d.N
		}
		vals[w.Name] = ref.F64(dims, data)
	}
	for _, in := range g.Inputs {
		vals[in.Name] = ref.Ints([]int{len(ints[in.Name])}, ints[in.Name])
	}
	return vals
}

func TestOpGradsMatchFiniteDifferences(t *testing.T) {
	covered := map[string]bool{}
	all := func(_ string, grad []float64) []int {
		idx := make([]int, len(grad))
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	worst, cases := 0.0, 0
	const rounds = 5
	for round := 0; round < rounds; round++ {
		r := rand.New(rand.NewSource(int64(round)))
		for i, c := range opCases(r) {
			t.Run(fmt.Sprintf("%d/%s", round, c.name), func(t *testing.T) {
				g, wrt := lossGraph(t, c)
				for _, n := range g.Nodes {
					covered[n.Op] = true
				}
				worst = math.Max(worst, checkFD(t, g, wrt, randValues(g, c.ints, int64(100*round+i)), 1e-5, all))
				cases++
			})
		}
	}
	t.Logf("worst relative difference from finite differences over %d cases (%d rounds of random shapes): %.2g", cases, rounds, worst)
	for _, op := range graph.OpNames() {
		if graph.HasGrad(op) && !covered[op] {
			t.Errorf("op %s has a backward rule but no finite-difference case", op)
		}
		if !ref.Has(op) {
			t.Errorf("ref does not implement op %s", op)
		}
	}
}
