// The moe kernel's DeepSeek-V3 routing (selection bias, grouped top-k) against graph/ref.
package exec_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/tensor"
)

func TestMoEDeepseekRoutingMatchesReference(t *testing.T) {
	sig := func(kv ...any) graph.Attrs {
		a := graph.Attrs{"gating": graph.Str(graph.MoESigmoid), "norm": graph.Int(1), "scale": graph.Float(2.5)}
		for i := 0; i < len(kv); i += 2 {
			a[kv[i].(string)] = graph.Int(int64(kv[i+1].(int)))
		}
		return a
	}
	for _, tc := range []struct {
		name string
		c    moeCase
		dt   tensor.DType
	}{
		{"bias (v3, one group)", moeCase{V: 13, D: 64, F: 32, E: 8, K: 2, bias: true, attrs: sig()}, tensor.F32},
		{"bias and shared expert", moeCase{V: 13, D: 64, F: 32, E: 8, K: 3, Fs: 64, bias: true, attrs: sig()}, tensor.F32},
		{"bias, 4 groups, 2 used, top-2 sums (noaux_tc)", moeCase{V: 13, D: 64, F: 32, E: 16, K: 4, Fs: 32, bias: true,
			attrs: sig("groups", 4, "groups_used", 2, "group_top", 2)}, tensor.F32},
		{"q8_0 bias, 4 groups, 1 used", moeCase{V: 13, D: 64, F: 32, E: 8, K: 2, bias: true,
			attrs: sig("groups", 4, "groups_used", 1, "group_top", 2)}, tensor.Q8_0},
		{"softmax, 3 groups, 2 used, max (group_limited_greedy)", moeCase{V: 13, D: 64, F: 32, E: 12, K: 3,
			attrs: graph.Attrs{"groups": graph.Int(3), "groups_used": graph.Int(2)}}, tensor.F32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := moeGraph(t, tc.c, tc.dt)
			ws := moeWeights(t, tc.c, tc.dt, 3)
			p, err := exec.Compile(g, ws, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			toks := []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 0, 7, 12, 11, 10}
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
			tol := 1e-5
			if tc.dt != tensor.F32 {
				tol = 3e-2 // activations quantized, as in TestMoEKernelMatchesReference
			}
			if diff > tol*big {
				t.Errorf("max |kernel - ref| = %.3g of the largest |output| %.3g", diff, big)
			}
			t.Logf("max |kernel - ref| %.3g (largest |output| %.3g), expert loads %v", diff, big, p.ExpertLoads()["r"])
		})
	}
}

// TestMoERoutingBadAttrs: attributes that do not fit the experts are errors naming them.
func TestMoERoutingBadAttrs(t *testing.T) {
	for _, tc := range []struct {
		attrs graph.Attrs
		bias  bool
		want  string
	}{
		{graph.Attrs{"groups": graph.Int(3)}, false, "groups"},
		{graph.Attrs{"groups": graph.Int(4), "groups_used": graph.Int(5)}, false, "groups_used"},
		{graph.Attrs{"groups": graph.Int(4), "groups_used": graph.Int(1)}, false, "groups_used"}, // 2 experts < K 3
		{graph.Attrs{"groups": graph.Int(4), "groups_used": graph.Int(2), "group_top": graph.Int(3)}, false, "group_top"},
		{graph.Attrs{"bias": graph.Int(1)}, false, "bias"},
		{graph.Attrs{"expert_bias": graph.Int(1)}, false, "expert_bias"},
		{graph.Attrs{"act": graph.Str("gelu")}, false, "act"},
		{graph.Attrs{"act": graph.Str(graph.MoESwiGLUOAI), "limit": graph.Float(-1)}, false, "limit"},
	} {
		n := graph.Sym("n")
		b := graph.NewBuilder("bad")
		x := b.Input("x", graph.T(tensor.F32, n, graph.D(8)))
		args := []*graph.Value{x, b.Weight("r", graph.T(tensor.F32, graph.D(8), graph.D(8))),
			b.Weight("g", graph.T(tensor.F32, graph.D(8), graph.D(4), graph.D(8))), b.Weight("u", graph.T(tensor.F32, graph.D(8), graph.D(4), graph.D(8))),
			b.Weight("d", graph.T(tensor.F32, graph.D(8), graph.D(8), graph.D(4)))}
		a := graph.Attrs{"experts_used": graph.Int(3)}
		for k, v := range tc.attrs {
			a[k] = v
		}
		b.Output(b.Op("moe", a, args...))
		if _, err := b.Finish(); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %s", tc.attrs, err, tc.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// randMXFP4 is a random MXFP4 tensor of the shape (last dimension a multiple of 32): scales
// near sd, random E2M1 nibbles.
func randMXFP4(rng *rand.Rand, name string, shape []int, sd float64) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	e := 127 + int(math.Round(math.Log2(sd)))
	data := make([]byte, n/32*17)
	for b := 0; b < n/32; b++ {
		data[b*17] = byte(e - 2 + rng.IntN(3))
		for j := 1; j < 17; j++ {
			data[b*17+j] = byte(rng.IntN(256))
		}
	}
	return &tensor.Tensor{Name: name, Type: tensor.MXFP4, Shape: append([]int(nil), shape...), Data: data}
}

// TestMoEGptOssMatchesReference: gpt-oss's experts (router and expert biases, swiglu_oai with
// gates and ups crossing the limit, softmax over the chosen experts' logits = softmax then
// renormalised top-k), in F32 and with MXFP4 experts, against graph/ref.
func TestMoEGptOssMatchesReference(t *testing.T) {
	oai := graph.Attrs{"norm": graph.Int(1), "act": graph.Str(graph.MoESwiGLUOAI)}
	small := graph.Attrs{"norm": graph.Int(1), "act": graph.Str(graph.MoESwiGLUOAI), "alpha": graph.Float(1.3), "limit": graph.Float(0.8)}
	for _, tc := range []struct {
		name string
		c    moeCase
		dt   tensor.DType
		tol  float64
	}{
		{"f32", moeCase{V: 13, D: 64, F: 32, E: 8, K: 4, expertBias: true, attrs: oai}, tensor.F32, 1e-5},
		{"f32 limit 0.8", moeCase{V: 13, D: 64, F: 32, E: 8, K: 2, expertBias: true, attrs: small}, tensor.F32, 1e-5},
		{"mxfp4 experts", moeCase{V: 13, D: 64, F: 64, E: 4, K: 2, expertBias: true, attrs: oai}, tensor.MXFP4, 1e-5},
		{"mxfp4 plain swiglu", moeCase{V: 13, D: 64, F: 32, E: 4, K: 2, attrs: graph.Attrs{"norm": graph.Int(1)}}, tensor.MXFP4, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := moeGraph(t, tc.c, tc.dt)
			ws := moeWeights(t, tc.c, tc.dt, 4)
			p, err := exec.Compile(g, ws, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			toks := []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 0, 7, 12, 11, 10}
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
				t.Errorf("max |kernel - ref| = %.3g of the largest |output| %.3g", diff, big)
			}
			t.Logf("max |kernel - ref| %.3g (largest |output| %.3g), expert loads %v", diff, big, p.ExpertLoads()["r"])
		})
	}
}
