// Gemma 2 tests: the paged executor against the float64 reference over sequences longer than
// the window, the Hugging Face round trip, bad configs, and llama.cpp's perplexity and greedy
// continuation (testdata/reference/gemma2).
package model_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/eval"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

// gemma2Plan is a small Gemma 2 with random norms and soft-caps small enough to matter.
func gemma2Plan(t *testing.T, window int) *convert.Plan {
	t.Helper()
	p, err := synth.Options{Arch: "gemma2", Dim: 32, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 64,
		SlidingWindow: window, AttnSoftcap: 4, FinalSoftcap: 3, AttnScalar: 24, Seed: 3, Std: 0.3}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range p.Tensors {
		tn := &p.Tensors[i]
		if !strings.HasSuffix(tn.Name, "norm.weight") {
			continue
		}
		data := make([]byte, 4*tn.Shape[0])
		for j := 0; j < tn.Shape[0]; j++ {
			binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(float32(1+0.3*r.NormFloat64())))
		}
		w := &tensor.Tensor{Name: tn.Name, Type: tensor.F32, Shape: tn.Shape, Data: data}
		tn.Load = func() (*tensor.Tensor, error) { return w, nil }
	}
	return p
}

// refLogits runs m's graph in float64 over seqs laid end to end, every row's logits.
func refLogits(t *testing.T, m *model.Model, seqs [][]int) []float64 {
	t.Helper()
	g, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]*ref.Tensor{}
	for name, w := range m.Weights {
		if vals[name], err = ref.FromTensor(w); err != nil {
			t.Fatal(err)
		}
	}
	var toks, pos, rows []int32
	for _, s := range seqs {
		for i, tk := range s {
			rows = append(rows, int32(len(toks)))
			toks, pos = append(toks, int32(tk)), append(pos, int32(i))
		}
	}
	vals[model.InputTokens] = ref.Ints([]int{len(toks)}, toks)
	vals[model.InputPositions] = ref.Ints([]int{len(toks)}, pos)
	vals[model.InputLogitRows] = ref.Ints([]int{len(rows)}, rows)
	out, err := ref.Run(g, vals)
	if err != nil {
		t.Fatal(err)
	}
	return out[0].F
}

// TestGemma2PagedMatchesReference: two sequences of 23 and 17 tokens (window 5) through the
// paged executor, as one ragged prefill batch then decoded token by token over blocks of 4,
// equal the float64 reference; a window of 64 gives other logits (the window is applied).
func TestGemma2PagedMatchesReference(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.gguf")
	if err := convert.WriteGGUF(path, gemma2Plan(t, 5), convert.Options{}); err != nil {
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
	if c.Arch != "gemma2" || c.SlidingWindow != 5 || c.AttnSoftcap != 4 || c.FinalSoftcap != 3 || c.AttnScalar != 24 || !c.Tied || !c.RopeNeoX {
		t.Fatalf("loaded config %+v", c)
	}
	r := rand.New(rand.NewPCG(8, 9))
	seqs := make([][]int, 2)
	for i, n := range []int{23, 17} {
		for range n {
			seqs[i] = append(seqs[i], r.IntN(c.Vocab))
		}
	}
	want := refLogits(t, m, seqs)

	// Prefill: the first 9 and 6 tokens of each as one batch; then one token per step.
	got := pagedLogits(t, m, seqs, []int{9, 6})
	if len(got) != len(want) {
		t.Fatalf("%d logits, the reference %d", len(got), len(want))
	}
	diff, maxAbs := maxDiff(want, got)
	t.Logf("gemma2 window 5, 23+17 tokens: max |logit| %.3g, paged executor vs float64 reference: max diff %.3g", maxAbs, diff)
	if maxAbs < 0.5 || maxAbs > 3 || diff > 1e-4*maxAbs {
		t.Fatalf("paged vs reference: max diff %.3g at max |logit| %.3g", diff, maxAbs)
	}

	// The single-sequence path (Model.Forward) agrees too.
	one, err := m.Forward(m.NewCache(32), seqs[0], 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range one {
		if d := math.Abs(float64(one[i]) - want[i]); d > 1e-4*maxAbs {
			t.Fatalf("Forward: logit %d differs from the reference by %.3g", i, d)
		}
	}

	// Without the window (64 > every position), the late rows change.
	wide := filepath.Join(dir, "wide.gguf")
	if err := convert.WriteGGUF(wide, gemma2Plan(t, 64), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	wb, err := loader.Open(wide, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wb.Close() })
	wl, err := wb.Model.Forward(wb.Model.NewCache(32), seqs[0], 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var early, late float64
	for i := range wl {
		d := math.Abs(float64(wl[i] - one[i]))
		if i < 5*c.Vocab {
			early = math.Max(early, d)
		} else {
			late = math.Max(late, d)
		}
	}
	if early > 1e-5 || late < 1e-2 {
		t.Fatalf("window 64 vs 5: max diff %.3g within the window (want ~0), %.3g past it (want > 0.01)", early, late)
	}

	// The Hugging Face form: norms written as w - 1, read back as 1 + w; the same logits.
	hfDir := filepath.Join(dir, "hf")
	if err := convert.WriteHF(hfDir, gemma2Plan(t, 5), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	hc, err := hfdir.ReadConfig(filepath.Join(hfDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if hc.ModelType != "gemma2" || hc.Raw["hidden_activation"] != "gelu_pytorch_tanh" || hc.HeadDim != 16 {
		t.Fatalf("config.json: %+v", hc.Raw)
	}
	hb, err := loader.Open(hfDir, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.Close() })
	if hb.Model.Config != c {
		t.Fatalf("HF config %+v, GGUF %+v", hb.Model.Config, c)
	}
	hl, err := hb.Model.Forward(hb.Model.NewCache(32), seqs[0], 0, true)
	if err != nil {
		t.Fatal(err)
	}
	// (1 + w) - 1 + 1 is not always 1 + w in float32: the norms move by an ulp.
	for i := range hl {
		if d := math.Abs(float64(hl[i] - one[i])); d > 1e-5*maxAbs {
			t.Fatalf("Hugging Face copy: logit %d is %v, the GGUF's %v", i, hl[i], one[i])
		}
	}
}

// TestGemma2NormShift: a Hugging Face norm weight w is 1 + w in GGUF, and back.
func TestGemma2NormShift(t *testing.T) {
	f := model.FamilyOf("gemma2")
	c := &model.Config{Arch: "gemma2"}
	w := synth.Generate("blk.0.attn_q.weight", []int{2, 2}, 1)
	if f.FromHFTensor(c, "blk.0.attn_q.weight") != nil || f.ToHFTensor(c, "blk.0.attn_q.weight") != nil {
		t.Fatal("a matrix is transformed")
	}
	w.Name = "blk.0.post_ffw_norm.weight"
	up, err := f.FromHFTensor(c, w.Name)(w)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := w.Float32()
	b, _ := up.Float32()
	for i := range a {
		if b[i] != a[i]+1 {
			t.Fatalf("element %d: %v -> %v, want +1", i, a[i], b[i])
		}
	}
	back, err := f.ToHFTensor(c, w.Name)(up)
	if err != nil {
		t.Fatal(err)
	}
	if bb, _ := back.Float32(); bb[0] != float32(float64(a[0]+1)-1) {
		t.Fatalf("back: %v, want %v", bb[0], a[0])
	}
}

// TestGemma2BadConfig: fields that do not fit give an error naming them.
func TestGemma2BadConfig(t *testing.T) {
	for _, tc := range []struct {
		o    synth.Options
		name string
	}{
		{synth.Options{Arch: "gemma2", SlidingWindow: -1}, "sliding_window"},
		{synth.Options{Arch: "gemma2", AttnSoftcap: -2}, "attn_logit_softcapping"},
		{synth.Options{Arch: "gemma2", FinalSoftcap: math.Inf(1)}, "final_logit_softcapping"},
		{synth.Options{Arch: "gemma2", AttnScalar: -1}, "query_pre_attn_scalar"},
	} {
		if _, err := tc.o.Config(); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%+v: error %v, want one naming %s", tc.o, err, tc.name)
		}
	}
	dir := t.TempDir()
	if err := convert.WriteHF(dir, gemma2Plan(t, 5), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for field, bad := range map[string]string{"hidden_activation": `"relu"`, "sliding_window": `-3`,
		"attn_logit_softcapping": `"big"`, "tie_word_embeddings": `false`} {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var v any
		json.Unmarshal([]byte(bad), &v)
		m[field] = v
		b, _ := json.Marshal(m)
		if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loader.Open(dir, loader.Options{}); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("config.json %s = %s: error %v, want one naming it", field, bad, err)
		}
	}
}

// TestGemma2LlamaCpp: the synth model of testdata/reference/gemma2 has llama.cpp's perplexity
// (relative difference <= 1e-4) and its 40-token greedy continuation.
func TestGemma2LlamaCpp(t *testing.T) {
	var want struct {
		PPL       float64 `json:"ppl"`
		NCtx      int     `json:"n_ctx"`
		Prompt    string  `json:"greedy_prompt"`
		GreedyHex string  `json:"greedy_bytes_hex"`
	}
	b, err := os.ReadFile(fixture.Path(t, "reference", "gemma2", "gemma2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(fixture.Path(t, "reference", "brown_val_100k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// llmcloud synth --arch gemma2 --layers 26 --dim 64 --heads 4 --kv-heads 2 --head-dim 32
	// --ffn 128 --window 16 --seed 7 --std 0.12
	p, err := synth.Options{Arch: "gemma2", Layers: 26, Dim: 64, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128,
		SlidingWindow: 16, Seed: 7, Std: 0.12}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "g2s.gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	bd, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bd.Close() })
	m := bd.Model
	ids := bd.Tok.Encode(string(text[:4000]), true, false)
	res, err := eval.PerplexityChunks(m, ids, want.NCtx, -1)
	if err != nil {
		t.Fatal(err)
	}
	rel := math.Abs(res.PPL-want.PPL) / want.PPL
	t.Logf("perplexity %.4f, llama.cpp %.4f: relative difference %.2g", res.PPL, want.PPL, rel)
	if rel > 1e-4 {
		t.Errorf("perplexity %.4f, llama.cpp %.4f: relative difference %.2g > 1e-4", res.PPL, want.PPL, rel)
	}

	wantGen, err := hex.DecodeString(want.GreedyHex)
	if err != nil {
		t.Fatal(err)
	}
	prompt := bd.Tok.Encode(want.Prompt, true, false)
	cache := m.NewCache(len(prompt) + len(wantGen))
	logits, err := m.Forward(cache, prompt, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var gen []byte
	for len(gen) < len(wantGen) {
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		if best >= 256 {
			t.Fatalf("greedy token %d is not a byte", best)
		}
		gen = append(gen, byte(best))
		if logits, err = m.Decode(cache, best); err != nil {
			t.Fatal(err)
		}
	}
	if string(gen) != string(wantGen) {
		t.Fatalf("greedy continuation %x, llama.cpp %x", gen, wantGen)
	}
}
