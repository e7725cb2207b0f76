// DeepSeek-V2 (deepseek2): llama.cpp's perplexity and greedy continuation on two synth models
// (q through its low-rank pair; the 27-block "Lite" form with a plain attn_q), the latent KV
// cache's size against the formula, the paged executor (absorbed MLA over blocks of 4 slots,
// ragged steps of two sequences) against the float64 reference (keys and values expanded),
// the Hugging Face round trip, and bad configurations.
package model_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

// The synth commands of synth-deepseek2.json and synth-deepseek2-lite.json.
var (
	deepseek2Synth = synth.Options{Arch: "deepseek2", Dim: 64, Layers: 3, Heads: 4, HeadDim: 24, RopeDim: 8, VHeadDim: 16,
		KVLoraRank: 32, QLoraRank: 48, DenseLead: 1, Experts: 4, ExpertsUsed: 2, ExpertFFN: 32, SharedFFN: 64, FFN: 128,
		ExpertsScale: 1.5, Std: 0.1, Seed: 1, Name: "synth-deepseek2"}
	deepseek2LiteSynth = synth.Options{Arch: "deepseek2", Dim: 32, Layers: 27, Heads: 2, HeadDim: 24, RopeDim: 8, VHeadDim: 16,
		KVLoraRank: 16, DenseLead: 1, Experts: 4, ExpertsUsed: 2, ExpertFFN: 16, SharedFFN: 32, FFN: 64,
		ExpertsNorm: true, Std: 0.15, Seed: 2, Name: "synth-deepseek2-lite"}
)

func TestDeepseek2MatchesLlamaCpp(t *testing.T) {
	for _, c := range []struct {
		ref string
		o   synth.Options
	}{{"synth-deepseek2.json", deepseek2Synth}, {"synth-deepseek2-lite.json", deepseek2LiteSynth}} {
		t.Run(c.ref, func(t *testing.T) { checkLlamaCpp(t, c.ref, c.o) })
	}
}

// TestMLAKVBytes: per token the cache holds layers x (kv_lora_rank + rope) floats, several
// times less than the keys and values llama.cpp caches (heads x (nope+rope) + heads x v).
func TestMLAKVBytes(t *testing.T) {
	v2 := model.Config{Arch: "deepseek2", Dim: 5120, Layers: 60, Heads: 128, KVHeads: 128, HeadDim: 192, RopeDim: 64,
		VHeadDim: 128, KVLoraRank: 1536 / 3, QLoraRank: 1536, FFN: 12288, Vocab: 102400, RopeTheta: 10000, NormEps: 1e-6,
		Experts: 160, ExpertsUsed: 6, ExpertFFN: 1536, SharedFFN: 2 * 1536, DenseLead: 1, ExpertsScale: 16}
	small, err := deepseek2Synth.Config()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []model.Config{small, v2} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		got := c.KVBytesPerToken(4)
		want := int64(c.Layers * (c.KVLoraRank + c.RopeDim) * 4)
		full := int64(c.Layers * (c.Heads*c.HeadDim + c.Heads*c.VHeadDim) * 4)
		t.Logf("%d layers, %d heads, latent %d + rope %d: %d bytes per token (formula %d); full K/V %d: %.1fx smaller",
			c.Layers, c.Heads, c.KVLoraRank, c.RopeDim, got, want, full, float64(full)/float64(got))
		if got != want || full < 4*got {
			t.Fatalf("KV bytes per token %d, formula %d, full attention %d", got, want, full)
		}
	}
	m, err := model.New(small, mustWeights(t, deepseek2Synth))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := m.NewPagedKV(10, 16)
	if err != nil {
		t.Fatal(err)
	}
	if kv.Bytes() != 160*small.KVBytesPerToken(4) || kv.VDim != 0 {
		t.Fatalf("pool of 160 slots: %d bytes (V rows %d), want %d", kv.Bytes(), kv.VDim, 160*small.KVBytesPerToken(4))
	}
}

func mustWeights(t *testing.T, o synth.Options) map[string]*tensor.Tensor {
	t.Helper()
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	ws := map[string]*tensor.Tensor{}
	for _, tt := range p.Tensors {
		w, err := tt.Load()
		if err != nil {
			t.Fatal(err)
		}
		ws[tt.Name] = w
	}
	return ws
}

// TestDeepseek2PagedVsReference: two sequences in ragged steps over blocks of 4 slots (a
// prefill chunk each, then one token each per step) against the float64 reference run on
// the whole sequences.
func TestDeepseek2PagedVsReference(t *testing.T) {
	for _, o := range []synth.Options{deepseek2Synth, deepseek2LiteSynth} {
		o.Layers, o.DenseLead = 3, 1
		o.Experts, o.ExpertsUsed, o.ExpertsSigmoid = 5, 3, o.QLoraRank == 0
		t.Run(o.Name, func(t *testing.T) { checkDeepseek2Paged(t, o) })
	}
}

func checkDeepseek2Paged(t *testing.T, o synth.Options) {
	path := writeMixtral(t, t.TempDir(), o)
	bd, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bd.Close() })
	m := bd.Model
	m.Pool = kernels.Serial
	seqs := [][]int{{5, 17, 200, 3, 3, 44, 101, 9, 250, 31, 7}, {7, 8, 9, 250, 1, 60, 61}}
	kv, err := m.NewPagedKV(12, 4)
	if err != nil {
		t.Fatal(err)
	}
	tables := [][]int32{{7, 2, 9}, {4, 0}}
	got := make([][]float32, len(seqs)) // per sequence, every row's logits
	var b model.Batch
	pre := []int{5, 3}
	step := func(bs []model.BatchSeq, rows []int) {
		out, err := m.ForwardBatch(&b, kv, bs)
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		for i, s := range bs {
			n := len(s.Tokens)
			got[rows[i]] = append(got[rows[i]], out[off:off+n*m.Config.Vocab]...)
			off += n * m.Config.Vocab
		}
	}
	step([]model.BatchSeq{{Tokens: seqs[0][:pre[0]], BlockTable: tables[0], NeedsLogits: true, NumLogits: pre[0]},
		{Tokens: seqs[1][:pre[1]], BlockTable: tables[1], NeedsLogits: true, NumLogits: pre[1]}}, []int{0, 1})
	for p := 0; ; p++ {
		var bs []model.BatchSeq
		var rows []int
		for i, s := range seqs {
			if at := pre[i] + p; at < len(s) {
				bs = append(bs, model.BatchSeq{Tokens: s[at : at+1], StartPos: at, BlockTable: tables[i], NeedsLogits: true})
				rows = append(rows, i)
			}
		}
		if len(bs) == 0 {
			break
		}
		step(bs, rows)
	}
	g, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if c := g.OpCounts(); c["mla_attention"] != m.Config.Layers || c["attention"] != 0 {
		t.Fatalf("graph ops %v: want one mla_attention per block", c)
	}
	refOut := refLogits(t, m, seqs)
	flat := append(append([]float32(nil), got[0]...), got[1]...)
	if len(flat) != len(refOut) {
		t.Fatalf("%d logits, reference %d", len(flat), len(refOut))
	}
	var maxAbs, maxDiff float64
	for i, w := range refOut {
		maxAbs = math.Max(maxAbs, math.Abs(w))
		maxDiff = math.Max(maxDiff, math.Abs(w-float64(flat[i])))
	}
	t.Logf("%s: max |logit| %.3g, paged absorbed MLA vs float64 expanded reference: max diff %.3g", o.Name, maxAbs, maxDiff)
	if maxAbs < 0.5 || maxDiff > 1e-4*maxAbs {
		t.Fatalf("paged vs reference: max diff %.3g at max |logit| %.3g", maxDiff, maxAbs)
	}

	// GGUF -> Hugging Face -> the same logits.
	hfDir := filepath.Join(t.TempDir(), "hf")
	if err := convert.WriteHF(hfDir, convert.FromBundle(bd), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	if cj, err := os.ReadFile(filepath.Join(hfDir, "config.json")); err != nil {
		t.Fatal(err)
	} else if o.ExpertsBias != strings.Contains(string(cj), `"deepseek_v3"`) || (o.YarnFactor > 0) != strings.Contains(string(cj), `"yarn"`) {
		t.Fatalf("config.json (selection bias %v, YaRN %v): %s", o.ExpertsBias, o.YarnFactor > 0, cj)
	}
	hb, err := loader.Open(hfDir, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.Close() })
	hb.Model.Pool = kernels.Serial
	if hb.Model.Config.QLoraRank != m.Config.QLoraRank || hb.Model.Config.KVLoraRank != m.Config.KVLoraRank {
		t.Fatalf("HF config %+v", hb.Model.Config)
	}
	if a, b := forwardLogits(t, hb.Model, seqs), forwardLogits(t, m, seqs); !sameFloats(a, b) {
		t.Fatalf("the Hugging Face copy's logits differ from the GGUF's")
	}
}

func TestDeepseek2BadConfig(t *testing.T) {
	base, err := deepseek2Synth.Config()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		edit  func(c *model.Config)
	}{
		{"kv_lora_rank", func(c *model.Config) { c.KVLoraRank = 0 }},
		{"rope.dimension_count", func(c *model.Config) { c.RopeDim = 24 }},
		{"rope.dimension_count", func(c *model.Config) { c.RopeDim = 7 }},
		{"value_length", func(c *model.Config) { c.VHeadDim = -1 }},
		{"leading_dense_block_count", func(c *model.Config) { c.DenseLead = 4 }},
		{"head_count_kv", func(c *model.Config) { c.KVHeads = 2 }},
		{"expert_used_count", func(c *model.Config) { c.ExpertsUsed = 5 }},
		{"expert_weights_scale", func(c *model.Config) { c.ExpertsScale = math.NaN() }},
	} {
		c := base
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one naming it", tc.field, err)
		}
	}
}
