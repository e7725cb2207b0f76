// The moe kernel against graph/ref's float64 moe over the same (dequantized) weights, in every
// weight dtype of the matmul kernels (a step of many rows, and rows alone: the one-row decode
// path of moe_decode.go), and its batch invariance: a row's output does not
// depend on the other rows of the step.
package exec_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

type moeCase struct {
	V, D, F, E, K int
	attrs         graph.Attrs
	Fs            int  // a shared expert of this width (0: none)
	gated         bool // with its sigmoid gate
	bias          bool // with a selection bias (DeepSeek-V3; the attribute bias=1)
	expertBias    bool // with gpt-oss's router and expert biases (expert_bias=1)
	lo, held      int  // expert parallelism: the stacks hold experts [lo, lo+held) (held 0: all E)
}

// moeGraph is embedding -> moe -> gather_rows.
func moeGraph(t *testing.T, c moeCase, dt tensor.DType) *graph.Graph {
	n := graph.Sym("n")
	b := graph.NewBuilder("moe")
	tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
	b.Input(exec.InputPositions, graph.T(tensor.I32, n))
	rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
	e := b.Weight("e", graph.T(tensor.F32, graph.D(c.V), graph.D(c.D)))
	r := b.Weight("r", graph.T(tensor.F32, graph.D(c.E), graph.D(c.D)))
	held := c.E
	a := graph.Attrs{"experts_used": graph.Int(int64(c.K))}
	if c.held > 0 {
		held, a["expert_lo"] = c.held, graph.Int(int64(c.lo))
	}
	g := b.Weight("g", graph.T(dt, graph.D(held), graph.D(c.F), graph.D(c.D)))
	u := b.Weight("u", graph.T(dt, graph.D(held), graph.D(c.F), graph.D(c.D)))
	d := b.Weight("d", graph.T(dt, graph.D(held), graph.D(c.D), graph.D(c.F)))
	for k, v := range c.attrs {
		a[k] = v
	}
	args := []*graph.Value{b.Op("embedding", nil, e, tok), r, g, u, d}
	if c.Fs > 0 {
		args = append(args, b.Weight("sg", graph.T(dt, graph.D(c.Fs), graph.D(c.D))),
			b.Weight("su", graph.T(dt, graph.D(c.Fs), graph.D(c.D))), b.Weight("sd", graph.T(dt, graph.D(c.D), graph.D(c.Fs))))
		if c.gated {
			args = append(args, b.Weight("si", graph.T(tensor.F32, graph.D(1), graph.D(c.D))))
		}
	}
	if c.expertBias {
		a["expert_bias"] = graph.Int(1)
		args = append(args, b.Weight("rb", graph.T(tensor.F32, graph.D(c.E))),
			b.Weight("gb", graph.T(tensor.F32, graph.D(c.E), graph.D(c.F))), b.Weight("ub", graph.T(tensor.F32, graph.D(c.E), graph.D(c.F))),
			b.Weight("db", graph.T(tensor.F32, graph.D(c.E), graph.D(c.D))))
	}
	if c.bias {
		a["bias"] = graph.Int(1)
		args = append(args, b.Weight("bias", graph.T(tensor.F32, graph.D(c.E))))
	}
	y := b.Op("moe", a, args...)
	b.Output(b.Op("gather_rows", nil, y, rows))
	gr, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return gr
}

func moeWeights(t *testing.T, c moeCase, dt tensor.DType, seed uint64) map[string]*tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, 7))
	rnd := func(name string, sd float64, shape ...int) *tensor.Tensor {
		w := f32T(name, shape, func(int) float32 { return float32(rng.NormFloat64() * sd) })
		if strings3(name) && dt == tensor.MXFP4 {
			return randMXFP4(rng, name, shape, sd)
		}
		if strings3(name) && dt != tensor.F32 {
			q, err := tensor.Convert(w, dt)
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		return w
	}
	ws := map[string]*tensor.Tensor{
		"e": rnd("e", 1, c.V, c.D), "r": rnd("r", 0.5, c.E, c.D),
		"g": rnd("g", 0.2, c.E, c.F, c.D), "u": rnd("u", 0.2, c.E, c.F, c.D), "d": rnd("d", 0.2, c.E, c.D, c.F),
	}
	if c.Fs > 0 {
		ws["sg"], ws["su"], ws["sd"] = rnd("sg", 0.2, c.Fs, c.D), rnd("su", 0.2, c.Fs, c.D), rnd("sd", 0.2, c.D, c.Fs)
		if c.gated {
			ws["si"] = rnd("si", 0.3, 1, c.D)
		}
	}
	if c.bias {
		ws["bias"] = rnd("bias", 0.3, c.E)
	}
	if c.expertBias {
		ws["rb"], ws["gb"], ws["ub"], ws["db"] = rnd("rb", 0.5, c.E), rnd("gb", 1, c.E, c.F), rnd("ub", 1, c.E, c.F), rnd("db", 0.5, c.E, c.D)
	}
	return ws
}

// strings3 reports whether name is one of the expert weights (stored in the test's dtype).
func strings3(name string) bool {
	switch name {
	case "g", "u", "d", "sg", "su", "sd":
		return true
	}
	return false
}

func moeStep(toks []int) *exec.Step {
	st := &exec.Step{Tokens: toks, KV: exec.KV{BlockSize: 1}}
	for i := range toks {
		st.Rows = append(st.Rows, kernels.PagedRow{Pos: i})
		st.LogitRows = append(st.LogitRows, i)
	}
	return st
}

func moeRef(t *testing.T, g *graph.Graph, ws map[string]*tensor.Tensor, toks []int) []float64 {
	vals := map[string]*ref.Tensor{}
	for name, w := range ws {
		v, err := ref.FromTensor(w)
		if err != nil {
			t.Fatal(err)
		}
		vals[name] = v
	}
	ids := make([]int32, len(toks))
	for i, v := range toks {
		ids[i] = int32(v)
	}
	pos := make([]int32, len(toks))
	vals[exec.InputTokens], vals[exec.InputPositions] = ref.Ints([]int{len(ids)}, ids), ref.Ints([]int{len(ids)}, pos)
	rows := make([]int32, len(toks))
	for i := range rows {
		rows[i] = int32(i)
	}
	vals[exec.InputLogitRows] = ref.Ints([]int{len(rows)}, rows)
	out, err := ref.Run(g, vals)
	if err != nil {
		t.Fatal(err)
	}
	return out[0].F
}

func TestMoEKernelMatchesReference(t *testing.T) {
	small := moeCase{V: 11, D: 64, F: 96, E: 5, K: 2}
	for _, tc := range []struct {
		name string
		c    moeCase
		dt   tensor.DType
		tol  float64 // relative to the largest |output|
	}{
		{"f32", small, tensor.F32, 1e-5},
		{"f16", small, tensor.F16, 2e-3},
		{"bf16", small, tensor.BF16, 1e-2},
		{"q8_0", small, tensor.Q8_0, 2e-2},
		{"q4_0", small, tensor.Q4_0, 5e-2},
		{"q4_k", moeCase{V: 9, D: 256, F: 256, E: 4, K: 2}, tensor.Q4_K, 5e-2},
		{"q6_k", moeCase{V: 9, D: 256, F: 256, E: 4, K: 2}, tensor.Q6_K, 3e-2},
		{"f32 top-1", moeCase{V: 11, D: 64, F: 96, E: 5, K: 1}, tensor.F32, 1e-5},
		{"f32 all experts unnormalised", moeCase{V: 11, D: 64, F: 96, E: 3, K: 3,
			attrs: graph.Attrs{"norm": graph.Int(0)}}, tensor.F32, 1e-5},
		{"f32 shared expert gated (qwen2moe)", moeCase{V: 11, D: 64, F: 32, E: 6, K: 2, Fs: 96, gated: true,
			attrs: graph.Attrs{"norm": graph.Int(0)}}, tensor.F32, 1e-5},
		{"q8_0 shared expert gated", moeCase{V: 11, D: 64, F: 32, E: 6, K: 2, Fs: 96, gated: true,
			attrs: graph.Attrs{"norm": graph.Int(0)}}, tensor.Q8_0, 2e-2},
		{"f32 shared expert ungated", moeCase{V: 11, D: 64, F: 32, E: 4, K: 1, Fs: 64}, tensor.F32, 1e-5},
		{"f32 sigmoid normalised scaled", moeCase{V: 11, D: 64, F: 96, E: 6, K: 3,
			attrs: graph.Attrs{"gating": graph.Str(graph.MoESigmoid), "norm": graph.Int(1), "scale": graph.Float(2.5)}}, tensor.F32, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			if c.attrs == nil {
				c.attrs = graph.Attrs{"norm": graph.Int(1)}
			}
			g := moeGraph(t, c, tc.dt)
			ws := moeWeights(t, c, tc.dt, 1)
			p, err := exec.Compile(g, ws, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			toks := []int{3, 1, 4, 1, 5, 9 % c.V, 2, 6 % c.V, 5, 3, 5, 8 % c.V, 0, 7 % c.V}
			got, err := p.Run(moeStep(toks))
			if err != nil {
				t.Fatal(err)
			}
			want := moeRef(t, g, ws, toks)
			var big, diff float64
			for i, w := range want {
				big = math.Max(big, math.Abs(w))
				diff = math.Max(diff, math.Abs(float64(got[i])-w))
			}
			if diff > tc.tol*big {
				t.Errorf("max |kernel - ref| = %.3g, %.3g of the largest |output| %.3g (tolerance %.3g)", diff, diff/big, big, tc.tol)
			}
			loads := p.ExpertLoads()["r"]
			var sum uint64
			for _, l := range loads {
				sum += l
			}
			// Rows alone: the one-row (decode) path against the same reference rows.
			for i, tok := range toks[:4] {
				one, err := p.Run(moeStep([]int{tok}))
				if err != nil {
					t.Fatal(err)
				}
				for j, v := range one {
					if d := math.Abs(float64(v) - want[i*c.D+j]); d > tc.tol*big {
						t.Fatalf("row %d alone [%d]: kernel %v, ref %v (tolerance %.3g of %.3g)", i, j, v, want[i*c.D+j], tc.tol, big)
					}
				}
			}
			if sum != uint64(len(toks)*c.K) {
				t.Errorf("expert loads %v sum to %d, want %d rows x %d", loads, sum, len(toks), c.K)
			}
			t.Logf("max |kernel - ref| %.3g (largest |output| %.3g), expert loads %v", diff, big, loads)
		})
	}
}

// TestMoEExpertBlocks runs moe over blocks of the experts (expert_lo, as expert-parallel ranks
// hold them): each block's result is the reference's sum over the chosen experts it holds (a
// step of rows and rows alone), the blocks' results add up to the whole op's, and every block
// counts every row's choices in its loads.
func TestMoEExpertBlocks(t *testing.T) {
	whole := moeCase{V: 13, D: 64, F: 96, E: 6, K: 2, attrs: graph.Attrs{"norm": graph.Int(1)}}
	toks := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 3}
	for _, tc := range []struct {
		dt  tensor.DType
		tol float64
	}{{tensor.F32, 1e-5}, {tensor.Q8_0, 2e-2}} {
		ws := moeWeights(t, whole, tc.dt, 4)
		p, err := exec.Compile(moeGraph(t, whole, tc.dt), ws, exec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		all, err := p.Run(moeStep(toks))
		if err != nil {
			t.Fatal(err)
		}
		all = append([]float32(nil), all...)
		sum := make([]float64, len(all))
		for lo := 0; lo < whole.E; lo += 2 {
			c := whole
			c.lo, c.held = lo, 2
			g := moeGraph(t, c, tc.dt)
			bw := map[string]*tensor.Tensor{}
			for name, w := range ws {
				if name == "g" || name == "u" || name == "d" {
					per := len(w.Data) / w.Shape[0]
					b := *w
					b.Shape = append([]int{c.held}, w.Shape[1:]...)
					b.Data = w.Data[lo*per : (lo+c.held)*per]
					w = &b
				}
				bw[name] = w
			}
			bp, err := exec.Compile(g, bw, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := bp.Run(moeStep(toks))
			if err != nil {
				t.Fatal(err)
			}
			want := moeRef(t, g, bw, toks)
			big := 0.0
			for _, w := range want {
				big = math.Max(big, math.Abs(w))
			}
			for i, v := range got {
				sum[i] += float64(v)
				if d := math.Abs(float64(v) - want[i]); d > tc.tol*math.Max(big, 1e-3) {
					t.Fatalf("%s experts [%d,%d) [%d]: kernel %v, ref %v", tc.dt, lo, lo+c.held, i, v, want[i])
				}
			}
			for i, tok := range toks[:5] { // rows alone: the decode path
				one, err := bp.Run(moeStep([]int{tok}))
				if err != nil {
					t.Fatal(err)
				}
				for j, v := range one {
					if d := math.Abs(float64(v) - want[i*c.D+j]); d > tc.tol*math.Max(big, 1e-3) {
						t.Fatalf("%s experts [%d,%d) row %d alone [%d]: kernel %v, ref %v", tc.dt, lo, lo+c.held, i, j, v, want[i*c.D+j])
					}
				}
			}
			var n uint64
			for _, l := range bp.ExpertLoads()["r"] {
				n += l
			}
			if n != uint64((len(toks)+5)*c.K) {
				t.Errorf("%s experts [%d,%d): loads sum to %d, want every row's %d choices", tc.dt, lo, lo+c.held, n, (len(toks)+5)*c.K)
			}
		}
		for i, v := range all {
			if d := math.Abs(float64(v) - sum[i]); d > 1e-5*math.Max(1, math.Abs(float64(v))) {
				t.Fatalf("%s [%d]: the blocks add up to %v, the whole op gives %v", tc.dt, i, sum[i], v)
			}
		}
	}
}

// TestMoEBatchInvariance runs every row alone and inside the whole step: with Invariant the
// bits agree; without, the values agree closely (a lone row takes the GEMV kernels).
func TestMoEBatchInvariance(t *testing.T) {
	c := moeCase{V: 13, D: 64, F: 96, E: 6, K: 2, attrs: graph.Attrs{"norm": graph.Int(1)}, Fs: 64, gated: true}
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.Q8_0, tensor.Q4_0} {
		for _, inv := range []bool{true, false} {
			g := moeGraph(t, c, dt)
			ws := moeWeights(t, c, dt, 2)
			p, err := exec.Compile(g, ws, exec.Options{Invariant: inv})
			if err != nil {
				t.Fatal(err)
			}
			toks := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 3, 3}
			all, err := p.Run(moeStep(toks))
			if err != nil {
				t.Fatal(err)
			}
			all = append([]float32(nil), all...)
			for i, tok := range toks {
				one, err := p.Run(moeStep([]int{tok}))
				if err != nil {
					t.Fatal(err)
				}
				for j, v := range one {
					w := all[i*c.D+j]
					if inv && math.Float32bits(v) != math.Float32bits(w) {
						t.Fatalf("%s invariant: row %d [%d] alone %v, in the step %v", dt, i, j, v, w)
					}
					if d := math.Abs(float64(v - w)); d > 2e-2*math.Max(1, math.Abs(float64(w))) {
						t.Fatalf("%s: row %d [%d] alone %v, in the step %v", dt, i, j, v, w)
					}
				}
			}
		}
	}
}
