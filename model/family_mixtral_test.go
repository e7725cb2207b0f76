// Mixtral (the llama family with experts) and Qwen2-MoE against llama.cpp, the float64
// reference and their Hugging Face forms: the random-weight GGUFs of
// testdata/reference/synth-{mixtral,qwen2moe}.json written again by synth (same bytes), their
// perplexity and greedy continuation equal to those llama-perplexity and llama-cli gave; the
// serving executor equal to graph/ref over the same graph; GGUF -> Hugging Face (mixtral's
// block_sparse_moe, qwen2_moe's mlp.experts) -> GGUF with bit-identical logits; and expert
// counts that do not fit the tensors refused with errors naming the field.
package model_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/eval"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

// mixtralSynth is the synth command of synth-mixtral.json.
var mixtralSynth = synth.Options{Arch: "llama", Experts: 4, ExpertsUsed: 2, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2,
	FFN: 64, Seed: 20, Std: 0.2, Name: "synth-mixtral"}

type mixtralRef struct {
	SHA256      string    `json:"gguf_sha256"`
	TextBytes   int       `json:"text_bytes"`
	Ctx         int       `json:"n_ctx"`
	PPL         float64   `json:"ppl"`
	Running     []float64 `json:"running_ppl"`
	Prompt      string    `json:"greedy_prompt"`
	GreedyIDs   []int     `json:"greedy_ids"`
	LlamaCommit string    `json:"llama_cpp_commit"`
}

func writeMixtral(t *testing.T, dir string, o synth.Options) string {
	t.Helper()
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mixtral.gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// qwen2moeSynth is the synth command of synth-qwen2moe.json.
var qwen2moeSynth = synth.Options{Arch: "qwen2moe", Experts: 4, ExpertsUsed: 2, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2,
	FFN: 128, ExpertFFN: 32, SharedFFN: 64, Seed: 21, Std: 0.2, Name: "synth-qwen2moe"}

func TestMoEMatchesLlamaCpp(t *testing.T) {
	for _, c := range []struct {
		ref string
		o   synth.Options
	}{{"synth-mixtral.json", mixtralSynth}, {"synth-qwen2moe.json", qwen2moeSynth}} {
		t.Run(c.ref, func(t *testing.T) { checkLlamaCpp(t, c.ref, c.o) })
	}
}

func checkLlamaCpp(t *testing.T, refFile string, o synth.Options) {
	var rc mixtralRef
	b, err := os.ReadFile(fixture.Path(t, "reference", refFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rc); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(fixture.Path(t, "reference", "brown_val_100k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	path := writeMixtral(t, t.TempDir(), o)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != rc.SHA256 {
		t.Fatalf("synth wrote a file of sha256 %x, llama.cpp scored %s: synth's output changed", sum, rc.SHA256)
	}
	bd, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	m := bd.Model
	if m.Config.Experts != o.Experts || m.Config.ExpertsUsed != o.ExpertsUsed || m.Config.Arch != o.Arch {
		t.Fatalf("loaded config %+v", m.Config)
	}
	ids := bd.Tok.Encode(string(text[:rc.TextBytes]), true, false)
	res, err := eval.PerplexityChunks(m, ids, rc.Ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Running) != len(rc.Running) {
		t.Fatalf("%d chunks, llama-perplexity had %d", len(res.Running), len(rc.Running))
	}
	for i, want := range rc.Running {
		// llama-perplexity prints 4 decimals: allow their rounding on top of 1e-4 relative.
		if d := math.Abs(res.Running[i] - want); d > 1e-4*want+5e-5 {
			t.Errorf("chunk %d: running PPL %.4f, llama-perplexity %.4f", i+1, res.Running[i], want)
		}
	}
	rel := math.Abs(res.PPL-rc.PPL) / rc.PPL
	t.Logf("PPL %.4f, llama-perplexity (llama.cpp %.12s) %.4f: relative difference %.2g", res.PPL, rc.LlamaCommit, rc.PPL, rel)
	if rel > 1e-4 {
		t.Errorf("PPL %.6f vs llama-perplexity %.4f: relative difference %.3g > 1e-4", res.PPL, rc.PPL, rel)
	}

	// Greedy continuation, one token at a time through the KV cache.
	toks := bd.Tok.Encode(rc.Prompt, true, false)
	c := m.NewCache(len(toks) + len(rc.GreedyIDs))
	logits, err := m.Forward(c, toks, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range rc.GreedyIDs {
		got := 0
		for j, v := range logits {
			if v > logits[got] {
				got = j
			}
		}
		if got != want {
			t.Fatalf("greedy token %d: %d, llama-cli %d", i, got, want)
		}
		if logits, err = m.Forward(c, []int{got}, c.Len, false); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMoEReferenceAndHF: the executor against the float64 reference over the model's graph,
// then the Hugging Face round trip, for Mixtral and Qwen2-MoE.
func TestMoEReferenceAndHF(t *testing.T) {
	mx, qm := mixtralSynth, qwen2moeSynth
	mx.Experts, mx.ExpertsUsed, mx.Vocab = 5, 3, 300
	qm.Experts, qm.ExpertsUsed, qm.Vocab = 5, 3, 300
	for _, c := range []struct {
		o                       synth.Options
		modelType, architecture string
		hfNames                 []string
		down                    string // expert 0's down matrix, [dim, expert ffn]
	}{
		{mx, "mixtral", "MixtralForCausalLM", []string{"model.layers.1.block_sparse_moe.gate.weight",
			"model.layers.1.block_sparse_moe.experts.4.w1.weight", "model.layers.0.block_sparse_moe.experts.2.w3.weight"},
			"model.layers.0.block_sparse_moe.experts.0.w2.weight"},
		{qm, "qwen2_moe", "Qwen2MoeForCausalLM", []string{"model.layers.1.mlp.gate.weight", "model.layers.1.mlp.experts.4.gate_proj.weight",
			"model.layers.0.mlp.experts.2.up_proj.weight", "model.layers.0.mlp.shared_expert.down_proj.weight",
			"model.layers.1.mlp.shared_expert_gate.weight", "model.layers.0.self_attn.q_proj.bias"},
			"model.layers.0.mlp.experts.0.down_proj.weight"},
	} {
		t.Run(c.modelType, func(t *testing.T) { checkMoERefHF(t, c.o, c.modelType, c.architecture, c.hfNames, c.down) })
	}
}

func checkMoERefHF(t *testing.T, o synth.Options, modelType, architecture string, hfNames []string, down string) {
	dir := t.TempDir()
	path := writeMixtral(t, dir, o)
	bd, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bd.Close() })
	m := bd.Model
	m.Pool = kernels.Serial
	seqs := [][]int{{5, 17, 290, 3, 3, 44, 101}, {7, 8, 9, 250, 1}}
	got := forwardLogits(t, m, seqs)
	g, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if c := g.OpCounts(); c["moe"] != m.Config.Layers || c["swiglu"]+c["silu"] != 0 {
		t.Fatalf("graph ops %v: want one moe per block and no dense feed-forward", c)
	}
	refOut := refLogits(t, m, seqs)
	var maxAbs, maxDiff float64
	for i, w := range refOut {
		maxAbs = math.Max(maxAbs, math.Abs(w))
		maxDiff = math.Max(maxDiff, math.Abs(w-float64(got[i])))
	}
	t.Logf("%s 5 experts, 3 per token: max |logit| %.3g, executor vs float64 reference: max diff %.3g", o.Arch, maxAbs, maxDiff)
	if maxAbs < 0.5 || maxDiff > 1e-4*maxAbs {
		t.Fatalf("executor vs reference: max diff %.3g at max |logit| %.3g", maxDiff, maxAbs)
	}

	// GGUF -> Hugging Face: the family's MoE model_type, the experts as one matrix each.
	hfDir := filepath.Join(dir, "hf")
	if err := convert.WriteHF(hfDir, convert.FromBundle(bd), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := hfdir.Load(hfDir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.ModelType != modelType || cfg.Config.Architectures[0] != architecture ||
		cfg.Config.Raw["num_experts_per_tok"] == nil {
		t.Fatalf("config.json %+v", cfg.Config)
	}
	set, err := safetensors.OpenDir(hfDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(hfNames, down) {
		if set.Tensors[name] == nil {
			t.Errorf("the Hugging Face copy lacks %s", name)
		}
	}
	cfgWant, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if w := set.Tensors[down]; w != nil && (w.Shape[0] != o.Dim || w.Shape[1] != cfgWant.ExpertWidth()) {
		t.Errorf("%s of shape %v, want [%d %d]", down, w.Shape, o.Dim, cfgWant.ExpertWidth())
	}
	set.Close()
	hb, err := loader.Open(hfDir, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.Close() })
	hb.Model.Pool = kernels.Serial
	if hf := forwardLogits(t, hb.Model, seqs); !sameFloats(hf, got) {
		t.Fatalf("the Hugging Face copy's logits differ from the GGUF's")
	}
	// ... and back to GGUF.
	back := filepath.Join(dir, "back.gguf")
	if err := convert.WriteGGUF(back, convert.FromBundle(hb), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	gb, err := loader.Open(back, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gb.Close() })
	gb.Model.Pool = kernels.Serial
	if rt := forwardLogits(t, gb.Model, seqs); !sameFloats(rt, got) {
		t.Fatalf("GGUF -> HF -> GGUF: logits differ")
	}
}

func sameFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMixtralBadExperts: configurations whose expert counts do not fit the tensors.
func TestMixtralBadExperts(t *testing.T) {
	dir := t.TempDir()
	p, err := mixtralSynth.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(c *model.Config)
		wantErr string
	}{
		{"used 0", func(c *model.Config) { c.ExpertsUsed = 0 }, "expert_used_count = 0"},
		{"used 5 of 4", func(c *model.Config) { c.ExpertsUsed = 5 }, "expert_used_count = 5, more experts per token than expert_count = 4"},
		{"qwen2 with experts", func(c *model.Config) { c.Arch = "qwen2" }, "architecture qwen2 has no mixture-of-experts form (expert_count = 4)"},
		{"qwen2moe without experts", func(c *model.Config) { c.Arch, c.Experts, c.ExpertsUsed = "qwen2moe", 0, 0 },
			"architecture qwen2moe is a mixture of experts, expert_count = 0"},
		{"expert width out of range", func(c *model.Config) { c.ExpertFFN = -1 }, "expert_feed_forward_length = -1 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := p.Config
			tc.edit(&c)
			q := *p
			q.Config = c
			err := convert.WriteGGUF(filepath.Join(dir, "bad.gguf"), &q, convert.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	// Tensors of 4 experts under a header of 3, or of none.
	for _, tc := range []struct {
		experts int
		wantErr string
	}{
		{3, "blk.0.ffn_down_exps.weight: shape [4 64 64], config wants [3 64 64] (expert_count = 3"},
		{0, "tensor blk.0.ffn_down.weight missing (no expert_count: a dense feed-forward)"},
		{-16, "blk.0.ffn_down_exps.weight: shape [4 64 64], config wants [4 64 16] (expert_count = 4, expert_used_count = 2, expert_feed_forward_length = 16"},
	} {
		cfg := p.Config
		cfg.Experts = tc.experts
		if tc.experts < 0 { // an expert width that does not fit the tensors
			cfg.Experts, cfg.ExpertFFN = 4, -tc.experts
		}
		if tc.experts == 0 {
			cfg.ExpertsUsed = 0
		}
		weights := map[string]*tensor.Tensor{}
		for _, pt := range p.Tensors {
			w, err := pt.Load()
			if err != nil {
				t.Fatal(err)
			}
			weights[pt.Name] = w
		}
		_, err := model.New(cfg, weights)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("experts %d: error %v, want one containing %q", tc.experts, err, tc.wantErr)
		}
	}
}
