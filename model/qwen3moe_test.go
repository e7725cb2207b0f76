// Qwen3-MoE tests (llama.cpp at c392e5094 has no qwen3moe, so the checks are llmcloud's own):
// the paged executor against the float64 reference, GGUF -> Hugging Face -> GGUF with
// bit-identical logits, norm_topk_prob both ways, and configs that do not fit refused by name.
package model_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
)

var qwen3moeSynth = synth.Options{Arch: "qwen3moe", Experts: 5, ExpertsUsed: 3, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2,
	HeadDim: 24, FFN: 128, ExpertFFN: 32, Vocab: 300, Seed: 23, Std: 0.2, Name: "synth-qwen3moe"}

// TestQwen3MoeReferenceAndHF: the executor equals graph/ref; the Hugging Face copy (qwen3_moe,
// mlp.experts.E.*, q_norm/k_norm) and the GGUF made back from it give the same logits.
func TestQwen3MoeReferenceAndHF(t *testing.T) {
	checkMoERefHF(t, qwen3moeSynth, "qwen3_moe", "Qwen3MoeForCausalLM", []string{"model.layers.1.mlp.gate.weight",
		"model.layers.1.mlp.experts.4.gate_proj.weight", "model.layers.0.mlp.experts.2.up_proj.weight",
		"model.layers.0.self_attn.q_norm.weight", "model.layers.1.self_attn.k_norm.weight"},
		"model.layers.0.mlp.experts.0.down_proj.weight")
}

// TestQwen3MoePagedMatchesReference: two sequences through the paged executor (a ragged
// prefill, then decode) equal the float64 reference; the renormalised top-k is in the graph.
func TestQwen3MoePagedMatchesReference(t *testing.T) {
	dir := t.TempDir()
	p, err := qwen3moeSynth.Plan()
	if err != nil {
		t.Fatal(err)
	}
	randomNorms(p, 11)
	path := filepath.Join(dir, "q.gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	m := b.Model
	m.Pool = kernels.NewPool(2)
	c := m.Config
	if c.Arch != "qwen3moe" || !c.QKNorm || !c.RopeNeoX || !c.ExpertsNorm || c.SharedFFN != 0 || c.ExpertFFN != 32 || c.HeadDim != 24 {
		t.Fatalf("loaded config %+v", c)
	}
	g, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if n.Op == "moe" && (n.Attrs.Int("norm", 0) != 1 || len(n.Args) != 5 || n.Attrs.Int("experts_used", 0) != 3) {
			t.Fatalf("moe node %v: want norm=1, 3 used, no shared expert", n.Attrs)
		}
	}
	seqs := [][]int{{5, 17, 290, 3, 3, 44, 101, 7, 8, 9, 250, 1, 0, 60}, {7, 8, 9, 250, 1, 77, 78, 12, 13}}
	want := refLogits(t, m, seqs)
	got := pagedLogits(t, m, seqs, []int{6, 4})
	d, a := maxDiff(want, got)
	t.Logf("qwen3moe 5 experts, 3 per token, 14+9 tokens: max |logit| %.3g, paged executor vs float64 reference: max diff %.3g", a, d)
	if a < 0.5 || d > 1e-4*a {
		t.Fatalf("paged vs reference: max diff %.3g at max |logit| %.3g", d, a)
	}
}

// TestQwen3MoeNormTopK: norm_topk_prob = false in config.json gives other logits, is written to
// GGUF as qwen3moe.expert_weights_norm = false and read back; true writes no key.
func TestQwen3MoeNormTopK(t *testing.T) {
	dir := t.TempDir()
	p, err := qwen3moeSynth.Plan()
	if err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(dir, "hf")
	if err := convert.WriteHF(hf, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	seqs := [][]int{{5, 17, 290, 3, 3, 44}}
	open := func(path string) *loader.Bundle {
		b, err := loader.Open(path, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		b.Model.Pool = kernels.Serial
		return b
	}
	normed := forwardLogits(t, open(hf).Model, seqs)
	editConfigJSON(t, hf, map[string]any{"norm_topk_prob": false})
	hb := open(hf)
	if hb.Model.Config.ExpertsNorm {
		t.Fatal("norm_topk_prob false read as true")
	}
	plain := forwardLogits(t, hb.Model, seqs)
	var d float64
	for i := range plain {
		d = math.Max(d, math.Abs(float64(plain[i]-normed[i])))
	}
	if d < 1e-3 {
		t.Fatalf("norm_topk_prob false vs true: logits differ by %.3g only", d)
	}
	back := filepath.Join(dir, "plain.gguf")
	if err := convert.WriteGGUF(back, convert.FromBundle(hb), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	gb := open(back)
	if v, ok := (&gguf.File{KVs: gb.Meta}).Bool("qwen3moe.expert_weights_norm"); !ok || v {
		t.Fatalf("qwen3moe.expert_weights_norm = %v (present %v), want false", v, ok)
	}
	if gb.Model.Config != hb.Model.Config {
		t.Fatalf("GGUF config %+v, HF %+v", gb.Model.Config, hb.Model.Config)
	}
	if rt := forwardLogits(t, gb.Model, seqs); !sameFloats(rt, plain) {
		t.Fatal("HF -> GGUF without renormalising: logits differ")
	}
	normedGGUF := filepath.Join(dir, "normed.gguf")
	if err := convert.WriteGGUF(normedGGUF, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := (&gguf.File{KVs: open(normedGGUF).Meta}).Get("qwen3moe.expert_weights_norm"); ok {
		t.Fatal("a renormalising model writes qwen3moe.expert_weights_norm (llama.cpp's default is true)")
	}
}

// TestQwen3MoeBadConfig: config.json fields that llmcloud cannot run, or that do not fit the
// tensors, give an error naming the field.
func TestQwen3MoeBadConfig(t *testing.T) {
	p, err := qwen3moeSynth.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		v     any
		want  string
	}{
		{"decoder_sparse_step", 2, "decoder_sparse_step"},
		{"mlp_only_layers", []int{1}, "mlp_only_layers"},
		{"norm_topk_prob", "yes", "norm_topk_prob"},
		{"num_experts_per_tok", 6, "num_experts_per_tok"},
		{"num_experts", 4, "expert_count = 4"},                      // the tensors hold 5
		{"moe_intermediate_size", 16, "expert_feed_forward_length"}, // the tensors are 32 wide
		{"moe_intermediate_size", -1, "moe_intermediate_size"},
		{"attention_bias", true, "attention_bias"},
	} {
		dir := t.TempDir()
		if err := convert.WriteHF(dir, p, convert.Options{}); err != nil {
			t.Fatal(err)
		}
		editConfigJSON(t, dir, map[string]any{tc.field: tc.v})
		if _, err := loader.Open(dir, loader.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config.json %s = %v: error %v, want one naming %s", tc.field, tc.v, err, tc.want)
		}
	}
	for _, tc := range []struct {
		o    synth.Options
		want string
	}{
		{synth.Options{Arch: "qwen3moe", Experts: 4, ExpertsUsed: 5}, "expert_used_count = 5"},
		{synth.Options{Arch: "qwen3moe", Experts: -1}, "expert_count = -1"},
	} {
		if _, err := tc.o.Config(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.o, err, tc.want)
		}
	}
	c := model.Config{Arch: "qwen3moe", Dim: 64, Layers: 1, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 64, Vocab: 10,
		RopeTheta: 1e6, NormEps: 1e-6}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "expert_count = 0") {
		t.Errorf("qwen3moe without experts: %v", err)
	}
}
