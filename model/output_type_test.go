package model

import (
	"math"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantizeOutput: the output matrix becomes Q8_0 / Q6_K (fewer bytes, the other weights
// untouched), the logits stay within the quantization's error of the float model's and are
// not identical (the opt-in changes them); a tied output, a quantized one and another type
// are errors naming what is wrong.
func TestQuantizeOutput(t *testing.T) {
	cfg := w8a8TestConfig()
	cfg.Dim, cfg.HeadDim = 256, 64 // Q6_K rows are multiples of 256
	toks := []int{1, 7, 49, 3, 3, 20, 11, 0, 42, 5}
	base, err := New(cfg, w8a8MakeWeights(cfg))
	if err != nil {
		t.Fatal(err)
	}
	want := w8a8Logits(t, base, toks)
	for _, c := range []struct {
		dt  tensor.DType
		tol float64 // of max |logit|
	}{{tensor.Q8_0, 0.01}, {tensor.Q6_K, 0.03}} {
		m, err := New(cfg, w8a8MakeWeights(cfg))
		if err != nil {
			t.Fatal(err)
		}
		emb := m.Weights["token_embd.weight"]
		before, after, err := m.QuantizeOutput(c.dt)
		if err != nil {
			t.Fatal(err)
		}
		if o := m.Weights["output.weight"]; o.Type != c.dt || after >= before || len(o.Data) != after {
			t.Fatalf("%s: output.weight is %s, %d -> %d bytes", c.dt, o.Type, before, after)
		}
		if m.Weights["token_embd.weight"] != emb {
			t.Fatalf("%s: token_embd.weight changed", c.dt)
		}
		got := w8a8Logits(t, m, toks)
		var d, s float64
		for i := range want {
			d = max(d, math.Abs(float64(got[i]-want[i])))
			s = max(s, math.Abs(float64(want[i])))
		}
		t.Logf("%s: max |Δlogit| / max |logit| = %.5f", c.dt, d/s)
		if d == 0 || d > c.tol*s {
			t.Fatalf("%s: max |Δlogit| %g at max |logit| %g, want in (0, %g]", c.dt, d, s, c.tol*s)
		}
		if _, _, err := m.QuantizeOutput(tensor.Q8_0); err == nil || !strings.Contains(err.Error(), "output.weight") {
			t.Fatalf("%s: quantizing a quantized output: %v", c.dt, err)
		}
	}
	m, err := New(cfg, w8a8MakeWeights(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.QuantizeOutput(tensor.Q4_0); err == nil || !strings.Contains(err.Error(), "q8_0 or q6_k") {
		t.Fatalf("Q4_0: %v", err)
	}
	delete(m.Weights, "output.weight")
	if _, _, err := m.QuantizeOutput(tensor.Q8_0); err == nil || !strings.Contains(err.Error(), "tied") {
		t.Fatalf("tied: %v", err)
	}
}
