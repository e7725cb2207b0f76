// Gemma 3 tests (llama.cpp at c392e5094 has no gemma3, so the checks are llmcloud's own): the
// paged executor against the float64 reference over sequences longer than the window, with
// the 5:1 local/global pattern, the two RoPE bases and linear scaling each shown to act;
// GGUF -> Hugging Face -> GGUF with the same logits; configs that do not fit refused by name.
package model_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
)

// gemma3Synth: 7 layers, so layer 5 is global and 0-4 and 6 local (window 5); the global
// layer's RoPE scaled linearly by 4; a local base of 100 to make the local rotation visible.
var gemma3Synth = synth.Options{Arch: "gemma3", Dim: 32, Layers: 7, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 64,
	SlidingWindow: 5, RopeLinear: 4, RopeLocalTheta: 100, AttnScalar: 24, Seed: 4, Std: 0.3, Name: "synth-gemma3"}

// openGemma3 writes o (random norms) as GGUF in dir and loads it.
func openGemma3(t *testing.T, dir, name string, o synth.Options) *loader.Bundle {
	t.Helper()
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	randomNorms(p, 5)
	path := filepath.Join(dir, name)
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	b.Model.Pool = kernels.NewPool(2)
	return b
}

func TestGemma3PagedMatchesReference(t *testing.T) {
	dir := t.TempDir()
	b := openGemma3(t, dir, "g.gguf", gemma3Synth)
	m, c := b.Model, b.Model.Config
	if c.Arch != "gemma3" || c.SlidingWindow != 5 || c.SlidingPattern != 6 || c.RopeLocalTheta != 100 || c.RopeLinear != 4 ||
		c.AttnScalar != 24 || c.AttnSoftcap != 0 || c.FinalSoftcap != 0 || !c.QKNorm || !c.Tied || !c.RopeNeoX {
		t.Fatalf("loaded config %+v", c)
	}
	// The graph: windows on layers 0-4 and 6, theta 100 there; layer 5 global, theta 1e6 and
	// freq_scale 1/4; per-head q/k norms.
	g, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	windows, local, global := 0, 0, 0
	for _, n := range g.Nodes {
		switch n.Op {
		case "attention":
			if w := n.Attrs.Int("window", 0); w == 5 {
				windows++
			} else if n.Attrs.Int("layer", -1) != 5 || w != 0 {
				t.Fatalf("attention %v: only layer 5 is global", n.Attrs)
			}
			if n.Attrs.Int("softcap", 0) != 0 {
				t.Fatal("a soft-cap in Gemma 3's graph")
			}
		case "rope", "qkv_rope":
			switch {
			case n.Attrs.Float("theta", 0) == 100 && n.Attrs.Float("freq_scale", 1) == 1:
				local++
			case n.Attrs.Float("theta", 0) == 1e6 && n.Attrs.Float("freq_scale", 1) == 0.25:
				global++
			default:
				t.Fatalf("rope %v", n.Attrs)
			}
		}
	}
	if windows != 6 || local == 0 || global == 0 || local != 6*global {
		t.Fatalf("%d windowed attentions (want 6), %d local and %d global ropes (want 6:1)", windows, local, global)
	}
	seqs := [][]int{make([]int, 23), make([]int, 17)}
	for i := range seqs {
		for j := range seqs[i] {
			seqs[i][j] = (j*37 + i*101 + 11) % c.Vocab
		}
	}
	want := refLogits(t, m, seqs)
	got := pagedLogits(t, m, seqs, []int{9, 6})
	d, a := maxDiff(want, got)
	t.Logf("gemma3 window 5, 7 layers, 23+17 tokens: max |logit| %.3g, paged executor vs float64 reference: max diff %.3g", a, d)
	if a < 0.5 || d > 1e-4*a {
		t.Fatalf("paged vs reference: max diff %.3g at max |logit| %.3g", d, a)
	}
	one, err := m.Forward(m.NewCache(32), seqs[0], 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range one {
		if e := math.Abs(float64(one[i]) - want[i]); e > 1e-4*a {
			t.Fatalf("Forward: logit %d differs from the reference by %.3g", i, e)
		}
	}

	// Each Gemma 3 setting acts: another window, pattern, local base or scaling changes the
	// logits of seqs[0], and only past the positions where it cannot matter.
	for _, v := range []struct {
		what  string
		edit  func(o *synth.Options)
		first int // rows before it are unchanged
	}{
		{"window 64", func(o *synth.Options) { o.SlidingWindow = 64 }, 5},
		{"every layer global (pattern 1)", func(o *synth.Options) { o.SlidingPattern = 1 }, 1},
		{"local base 1e4", func(o *synth.Options) { o.RopeLocalTheta = 1e4 }, 1},
		{"no linear scaling", func(o *synth.Options) { o.RopeLinear = 0 }, 1},
	} {
		o := gemma3Synth
		v.edit(&o)
		ob := openGemma3(t, dir, "v.gguf", o)
		l, err := ob.Model.Forward(ob.Model.NewCache(32), seqs[0], 0, true)
		if err != nil {
			t.Fatal(err)
		}
		var early, late float64
		for i := range l {
			e := math.Abs(float64(l[i] - one[i]))
			if i < v.first*c.Vocab {
				early = math.Max(early, e)
			} else {
				late = math.Max(late, e)
			}
		}
		if early > 1e-5 || late < 1e-3 {
			t.Fatalf("%s: max diff %.3g before row %d (want ~0), %.3g after (want > 1e-3)", v.what, early, v.first, late)
		}
	}
}

// TestGemma3HFRoundTrip: config.json (gemma3_text, layer_types, rope_local_base_freq, linear
// rope_scaling, q_norm/k_norm as w, GGUF's 1 + w) gives the GGUF's config and logits, and the
// GGUF written back from it has llama.cpp's keys.
func TestGemma3HFRoundTrip(t *testing.T) {
	dir := t.TempDir()
	b := openGemma3(t, dir, "g.gguf", gemma3Synth)
	b.Model.Pool = kernels.Serial
	seqs := [][]int{{1, 200, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	want := forwardLogits(t, b.Model, seqs)
	hfDir := filepath.Join(dir, "hf")
	if err := convert.WriteHF(hfDir, convert.FromBundle(b), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	hc, err := hfdir.ReadConfig(filepath.Join(hfDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if hc.ModelType != "gemma3_text" || hc.Architectures[0] != "Gemma3ForCausalLM" || hc.RopeScaling == nil ||
		hc.RopeScaling.Type != "linear" || hc.RopeScaling.Factor != 4 || hc.Raw["final_logit_softcapping"] != nil {
		t.Fatalf("config.json %+v", hc)
	}
	if lt, _ := hc.Raw["layer_types"].([]any); len(lt) != 7 || lt[5] != "full_attention" || lt[6] != "sliding_attention" {
		t.Fatalf("layer_types %v", hc.Raw["layer_types"])
	}
	hb, err := loader.Open(hfDir, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.Close() })
	hb.Model.Pool = kernels.Serial
	if hb.Model.Config != b.Model.Config {
		t.Fatalf("HF config %+v, GGUF %+v", hb.Model.Config, b.Model.Config)
	}
	got := forwardLogits(t, hb.Model, seqs)
	var a float64
	for _, w := range want {
		a = math.Max(a, math.Abs(float64(w)))
	}
	// (1 + w) - 1 + 1 is not always 1 + w in float32: the norms move by an ulp.
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*a {
			t.Fatalf("Hugging Face copy: logit %d is %v, the GGUF's %v", i, got[i], want[i])
		}
	}
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
	f := &gguf.File{KVs: gb.Meta}
	if w, _ := f.Uint("gemma3.attention.sliding_window"); w != 5 {
		t.Fatalf("gemma3.attention.sliding_window = %d", w)
	}
	if typ, _ := f.String("gemma3.rope.scaling.type"); typ != "linear" {
		t.Fatalf("gemma3.rope.scaling.type = %q", typ)
	}
	if v, _ := f.Float("gemma3.rope.freq_base"); v != 1e6 {
		t.Fatalf("gemma3.rope.freq_base = %v", v)
	}
	if _, ok := f.Get("gemma3.attention.sliding_window_pattern"); ok {
		t.Fatal("the llmcloud pattern key written for llama.cpp's pattern 6")
	}
	if gb.Model.Config != b.Model.Config {
		t.Fatalf("GGUF -> HF -> GGUF config %+v, want %+v", gb.Model.Config, b.Model.Config)
	}
	rt := forwardLogits(t, gb.Model, seqs)
	for i := range rt {
		if d := math.Abs(float64(rt[i] - want[i])); d > 1e-5*a {
			t.Fatalf("GGUF -> HF -> GGUF: logit %d is %v, was %v", i, rt[i], want[i])
		}
	}
}

// TestGemma3BadConfig: fields that do not fit give an error naming them.
func TestGemma3BadConfig(t *testing.T) {
	for _, tc := range []struct {
		o    synth.Options
		name string
	}{
		{synth.Options{Arch: "gemma3", SlidingPattern: -1}, "sliding_window_pattern"},
		{synth.Options{Arch: "gemma3", RopeLocalTheta: math.NaN()}, "rope_local_base_freq"},
		{synth.Options{Arch: "gemma3", RopeLinear: -2}, "rope_scaling.factor"},
		{synth.Options{Arch: "gemma3", AttnSoftcap: 50}, "attn_logit_softcapping"},
		{synth.Options{Arch: "gemma3", FinalSoftcap: 30}, "final_logit_softcapping"},
		{synth.Options{Arch: "gemma3", SlidingWindow: -1}, "sliding_window"},
	} {
		if _, err := tc.o.Config(); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%+v: error %v, want one naming %s", tc.o, err, tc.name)
		}
	}
	p, err := gemma3Synth.Plan()
	if err != nil {
		t.Fatal(err)
	}
	sliding := func(full ...int) []string {
		lt := make([]string, 7)
		for i := range lt {
			lt[i] = "sliding_attention"
		}
		for _, f := range full {
			lt[f] = "full_attention"
		}
		return lt
	}
	for _, tc := range []struct {
		field string
		v     any
		name  string
	}{
		{"layer_types", sliding(1, 4), "layer_types"},  // not periodic
		{"layer_types", sliding(5)[:6], "layer_types"}, // 6 of 7 layers
		{"sliding_window_pattern", 3, "sliding_window_pattern"},
		{"sliding_window_pattern", 0, "sliding_window_pattern"},
		{"attn_logit_softcapping", 50, "attn_logit_softcapping"},
		{"final_logit_softcapping", 30, "final_logit_softcapping"},
		{"rope_scaling", map[string]any{"rope_type": "yarn", "factor": 4}, "rope_scaling"},
		{"rope_local_base_freq", -1, "rope_local_base_freq"},
		{"query_pre_attn_scalar", "x", "query_pre_attn_scalar"},
		{"hidden_activation", "relu", "hidden_activation"},
		{"tie_word_embeddings", false, "tie_word_embeddings"},
		{"head_dim", 8, "self_attn.q_proj.weight has shape [64 32]"},
	} {
		dir := t.TempDir()
		if err := convert.WriteHF(dir, p, convert.Options{}); err != nil {
			t.Fatal(err)
		}
		editConfigJSON(t, dir, map[string]any{tc.field: tc.v})
		if _, err := loader.Open(dir, loader.Options{}); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("config.json %s = %v: error %v, want one naming %s", tc.field, tc.v, err, tc.name)
		}
	}
	// A GGUF that says linear scaling for a family without it.
	c := model.Config{Arch: "gemma3", SlidingPattern: 6, RopeLinear: math.Inf(1)}
	if err := c.Validate(); err == nil {
		t.Fatal("an infinite rope_scaling.factor accepted")
	}
}
