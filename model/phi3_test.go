// The phi3 family: its graph through the serving executor against the float64 reference (with
// LongRoPE's long factors and attention factor), the serving passes fusing it as they fuse
// Llama's, and bad input (fused tensors that do not fit the heads or the FFN width, LongRoPE
// factors of the wrong length, a binding sliding window) refused with the field named.
package model_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

func phi3Options() synth.Options {
	return synth.Options{Arch: "phi3", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, CtxLen: 256,
		RopeOrigCtx: 64, Std: 0.25, Seed: 5}
}

// TestPhi3GraphMatchesReference runs the serving executor against the float64 reference
// interpreter, without a window and with one (4 positions) that binds on the 10-token sequence.
func TestPhi3GraphMatchesReference(t *testing.T) {
	for _, window := range []int{0, 4} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			o := phi3Options()
			o.SlidingWindow = window
			checkPhi3Reference(t, o)
		})
	}
}

func checkPhi3Reference(t *testing.T, o synth.Options) {
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "phi3.gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := b.Model
	m.Pool = kernels.Serial
	if r := m.Config.LongRope; r == nil || !r.UseLong(m.Config.CtxLen) || math.Abs(r.AttnFactor-1.1547005) > 1e-6 {
		t.Fatalf("LongRoPE read back as %+v", r)
	}
	seqs := [][]int{{5, 17, 200, 3, 3, 44, 101, 9, 9, 12}, {7, 8, 9, 250, 1}}
	got := forwardLogits(t, m, seqs)

	g, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	L := m.Config.Layers
	if c := g.OpCounts(); c["split"] != 2*L || c["rope"] != 2*L || c["matmul"] != 4*L+1 {
		t.Fatalf("graph ops %v", c)
	}
	sg, _, err := graph.RunPasses(g, graph.ServingPipeline()...)
	if err != nil {
		t.Fatal(err)
	}
	if c := sg.OpCounts(); c["qkv_rope"] != L || c["swiglu"] != L || c["rope"] != 0 {
		t.Errorf("serving graph ops %v: the passes did not fuse rope and swiglu after the splits", c)
	}
	refOut := refLogits(t, m, seqs)
	want := refOut
	var maxAbs, maxDiff float64
	for i := range want {
		maxAbs = math.Max(maxAbs, math.Abs(want[i]))
		maxDiff = math.Max(maxDiff, math.Abs(want[i]-float64(got[i])))
	}
	t.Logf("phi3 (window %d): max |logit| %.3g, executor vs float64 reference: max diff %.3g", o.SlidingWindow, maxAbs, maxDiff)
	if maxAbs < 0.5 || maxDiff > 1e-4*maxAbs {
		t.Fatalf("executor vs reference: max diff %.3g at max |logit| %.3g", maxDiff, maxAbs)
	}
}

// phi3File writes the synth model with tensor name replaced by one of shape (random values).
func phi3File(t *testing.T, o synth.Options, name string, shape []int) string {
	t.Helper()
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Tensors {
		if p.Tensors[i].Name == name {
			w := synth.Generate(name, shape, 1)
			p.Tensors[i] = convert.Tensor{Name: name, Type: tensor.F32, Shape: shape,
				Load: func() (*tensor.Tensor, error) { return w, nil }}
		}
	}
	path := filepath.Join(t.TempDir(), "bad.gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPhi3BadInput(t *testing.T) {
	o := phi3Options()
	for _, c := range []struct {
		name  string
		shape []int
		want  []string
	}{
		{"blk.1.attn_qkv.weight", []int{96, 64}, []string{"blk.1.attn_qkv.weight", "phi3.attention.head_count_kv", "[128 64]"}},
		{"blk.0.ffn_up.weight", []int{96, 64}, []string{"blk.0.ffn_up.weight", "phi3.feed_forward_length", "[192 64]"}},
		{model.RopeFactorsLong, []int{4}, []string{model.RopeFactorsLong, "[8]"}},
	} {
		_, err := loader.Open(phi3File(t, o, c.name, c.shape), loader.Options{})
		t.Logf("%s: %v", c.name, err)
		if err == nil {
			t.Errorf("%s %v accepted", c.name, c.shape)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: error %q does not name %q", c.name, c.shape, err, w)
			}
		}
	}

	// config.json: LongRoPE factors of the wrong length, a sliding window that is not a number.
	dir := filepath.Join(t.TempDir(), "hf")
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if err := convert.WriteHF(dir, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	orig, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(map[string]any)
		want string
	}{
		{func(m map[string]any) { m["rope_scaling"].(map[string]any)["long_factor"] = []any{1.0, 2.0} }, "rope_scaling.long_factor"},
		{func(m map[string]any) { delete(m["rope_scaling"].(map[string]any), "short_factor") }, "rope_scaling.short_factor"},
		{func(m map[string]any) { m["sliding_window"] = "wide" }, "sliding_window"},
		{func(m map[string]any) { m["original_max_position_embeddings"] = -3 }, "original_max_position_embeddings"},
		{func(m map[string]any) { m["num_key_value_heads"] = 4 }, "qkv_proj"},
	} {
		var m map[string]any
		if err := json.Unmarshal(orig, &m); err != nil {
			t.Fatal(err)
		}
		c.edit(m)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loader.Open(dir, loader.Options{})
		t.Logf("%s: %v", c.want, err)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config.json edit naming %s: error %v", c.want, err)
		}
	}
}
