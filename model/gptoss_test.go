// gpt-oss tests (gpt-oss is newer than llama.cpp c392e5094, so the checks are llmcloud's own):
// a Hugging Face directory (transformers' fused, transposed and interleaved gate_up_proj)
// and the GGUF of the same weights give the same logits, with F32 experts and with MXFP4
// experts against their dequantized copy; the paged executor equals the float64 reference
// over windowed layers with sinks and YaRN; configs that do not fit are refused by name.
package model_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

// gptossSynth: window 5 (sequences run past it), YaRN 4 over 16 positions, 5 experts, 2 used.
var gptossSynth = synth.Options{Arch: "gpt-oss", Experts: 5, ExpertsUsed: 2, Dim: 64, Layers: 3, Heads: 4, KVHeads: 2,
	HeadDim: 16, FFN: 32, Vocab: 300, SlidingWindow: 5, YarnFactor: 4, YarnOrigCtx: 16, Seed: 31, Std: 0.3,
	Name: "synth-gpt-oss"}

var gptossSeqs = [][]int{{5, 17, 290, 3, 3, 44, 101, 7, 8, 9, 250, 1, 0, 60}, {7, 8, 9, 250, 1, 77, 78, 12, 13}}

// writeGptOss writes o as GGUF (experts as o makes them) and as a Hugging Face directory.
func writeGptOss(t *testing.T, o synth.Options) (ggufPath, hfDir string) {
	t.Helper()
	dir := t.TempDir()
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	randomNorms(p, 5)
	ggufPath, hfDir = filepath.Join(dir, "m.gguf"), filepath.Join(dir, "hf")
	if err := convert.WriteGGUF(ggufPath, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := convert.WriteHF(hfDir, p, convert.Options{Warn: func(string) {}}); err != nil {
		t.Fatal(err)
	}
	return ggufPath, hfDir
}

func openGptOss(t *testing.T, path string) *model.Model {
	t.Helper()
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	b.Model.Pool = kernels.Serial
	return b.Model
}

// TestGptOssHFMatchesGGUF: the HF directory holds transformers' layout (gate_up_proj
// [E, D, 2F] with gate in the even columns, down_proj [E, F, D], sinks, router bias) and
// gives bit-identical logits to the GGUF.
func TestGptOssHFMatchesGGUF(t *testing.T) {
	gp, hp := writeGptOss(t, gptossSynth)
	mg, mh := openGptOss(t, gp), openGptOss(t, hp)
	c := mg.Config
	if c.Arch != "gpt-oss" || !c.QKVBias || !c.RopeNeoX || c.SlidingWindow != 5 || c.Yarn == nil || c.Yarn.Factor != 4 ||
		c.Yarn.OrigCtx != 16 || c.Experts != 5 || c.ExpertsUsed != 2 || c.Tied {
		t.Fatalf("GGUF config %+v", c)
	}
	hc := mh.Config
	if hc.Arch != c.Arch || hc.SlidingWindow != 5 || hc.Yarn == nil || hc.Yarn.Factor != 4 || hc.Yarn.OrigCtx != 16 || !sameBetas(hc.Yarn, c.Yarn) || hc.ExpertWidth() != 32 {
		t.Fatalf("HF config %+v, GGUF's %+v", hc, c)
	}
	set, err := safetensors.OpenDir(hp)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	gu, dn := set.Tensors["model.layers.1.mlp.experts.gate_up_proj"], set.Tensors["model.layers.1.mlp.experts.down_proj"]
	for _, n := range []string{"model.layers.0.self_attn.sinks", "model.layers.2.mlp.router.bias", "model.layers.0.mlp.experts.gate_up_proj_bias",
		"model.layers.0.mlp.experts.down_proj_bias", "model.layers.1.self_attn.o_proj.bias", "lm_head.weight"} {
		if set.Tensors[n] == nil {
			t.Errorf("HF tensor %s missing", n)
		}
	}
	if gu == nil || dn == nil || !slices.Equal(gu.Shape, []int{5, 64, 64}) || !slices.Equal(dn.Shape, []int{5, 32, 64}) {
		t.Fatalf("gate_up_proj %v, down_proj %v: want [5 64 64] and [5 32 64]", gu, dn)
	}
	guv, _ := gu.Float32()
	dnv, _ := dn.Float32()
	gate, _ := mg.Weights["blk.1.ffn_gate_exps.weight"].Float32()
	up, _ := mg.Weights["blk.1.ffn_up_exps.weight"].Float32()
	down, _ := mg.Weights["blk.1.ffn_down_exps.weight"].Float32()
	for e := 0; e < 5; e++ {
		for d := 0; d < 64; d++ {
			for j := 0; j < 32; j++ {
				if guv[(e*64+d)*64+2*j] != gate[(e*32+j)*64+d] || guv[(e*64+d)*64+2*j+1] != up[(e*32+j)*64+d] ||
					dnv[(e*32+j)*64+d] != down[(e*64+d)*32+j] {
					t.Fatalf("expert %d, dim %d, unit %d: HF layout differs from transformers' (x·W, gate even, up odd)", e, d, j)
				}
			}
		}
	}
	a, b := forwardLogits(t, mg, gptossSeqs), forwardLogits(t, mh, gptossSeqs)
	var big float64
	for i := range a {
		big = math.Max(big, math.Abs(float64(a[i])))
		if a[i] != b[i] {
			t.Fatalf("logit %d: GGUF %v, HF %v", i, a[i], b[i])
		}
	}
	if big < 0.5 {
		t.Fatalf("max |logit| %.3g: too flat to test", big)
	}
	t.Logf("gpt-oss GGUF and HF: %d logits bit-identical (max |logit| %.3g)", len(a), big)
}

// TestGptOssMXFP4MatchesDequantizedHF: MXFP4 experts in the GGUF (kept as MXFP4, the moe
// kernel's MXFP4 path) against the HF copy holding them dequantized to F32.
func TestGptOssMXFP4MatchesDequantizedHF(t *testing.T) {
	o := gptossSynth
	o.ExpertType = tensor.MXFP4
	gp, hp := writeGptOss(t, o)
	mg, mh := openGptOss(t, gp), openGptOss(t, hp)
	for _, n := range []string{"blk.0.ffn_gate_exps.weight", "blk.2.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight"} {
		if mg.Weights[n].Type != tensor.MXFP4 || mh.Weights[n].Type != tensor.F32 {
			t.Fatalf("%s: GGUF %s, HF %s: want MXFP4 and F32", n, mg.Weights[n].Type, mh.Weights[n].Type)
		}
	}
	a, b := forwardLogits(t, mg, gptossSeqs), forwardLogits(t, mh, gptossSeqs)
	var big, diff float64
	for i := range a {
		big = math.Max(big, math.Abs(float64(a[i])))
		diff = math.Max(diff, math.Abs(float64(a[i])-float64(b[i])))
	}
	t.Logf("gpt-oss MXFP4 GGUF vs dequantized HF: max |logit| %.3g, max diff %.3g", big, diff)
	if big < 0.5 || diff > 1e-4*big {
		t.Fatalf("MXFP4 GGUF vs dequantized HF: max diff %.3g at max |logit| %.3g", diff, big)
	}
}

// TestGptOssPagedMatchesReference: two sequences (a ragged prefill, then decode) through the
// paged executor equal the float64 reference; the graph has sinks, windows on the even
// layers only, YaRN rope and gpt-oss's moe.
func TestGptOssPagedMatchesReference(t *testing.T) {
	for _, et := range []tensor.DType{tensor.F32, tensor.MXFP4} {
		o := gptossSynth
		o.ExpertType = et
		gp, _ := writeGptOss(t, o)
		m := openGptOss(t, gp)
		m.Pool = kernels.NewPool(2)
		g, err := m.Graph()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range g.Nodes {
			switch n.Op {
			case "attention":
				l := n.Attrs.Int("layer", -1)
				if w := n.Attrs.Int("window", 0); len(n.Args) != 4 || (l%2 == 0) != (w == 5) || (l%2 == 1 && w != 0) {
					t.Fatalf("attention layer %d: window %d, %d args: want sinks, window 5 on even layers", l, w, len(n.Args))
				}
			case "rope":
				if n.Attrs.Float("yarn_factor", 0) != 4 || n.Attrs.Int("neox", 0) != 1 {
					t.Fatalf("rope %v: want YaRN 4, rotate-half", n.Attrs)
				}
			case "moe":
				if n.Attrs.Int("expert_bias", 0) != 1 || n.Attrs.Str("act", "") != "swiglu_oai" || n.Attrs.Int("norm", 0) != 1 {
					t.Fatalf("moe %v", n.Attrs)
				}
			}
		}
		want := refLogits(t, m, gptossSeqs)
		got := pagedLogits(t, m, gptossSeqs, []int{6, 4})
		d, a := maxDiff(want, got)
		t.Logf("gpt-oss (%s experts) 14+9 tokens, window 5: max |logit| %.3g, paged executor vs float64 reference: max diff %.3g", et, a, d)
		if a < 0.5 || d > 1e-4*a {
			t.Fatalf("paged vs reference: max diff %.3g at max |logit| %.3g", d, a)
		}
		if gs := m.KVGroups(); len(gs) != 2 || gs[0].Window != 5 || !slices.Equal(gs[0].Layers, []int{0, 2}) {
			t.Fatalf("KV groups %+v: want the even layers windowed", gs)
		}
	}
}

// TestGptOssBadConfig: config.json fields that do not fit are refused with their names.
func TestGptOssBadConfig(t *testing.T) {
	_, hp := writeGptOss(t, gptossSynth)
	for _, tc := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"swiglu_limit": 5.0}, "swiglu_limit"},
		{map[string]any{"layer_types": []string{"full_attention", "sliding_attention", "full_attention"}}, "layer_types[0]"},
		{map[string]any{"layer_types": []string{"sliding_attention"}}, "layer_types"},
		{map[string]any{"sliding_window": 0}, "sliding_window"},
		{map[string]any{"sliding_window": "x"}, "sliding_window"},
		{map[string]any{"attention_bias": false}, "attention_bias"},
		{map[string]any{"num_experts_per_tok": 6}, "num_experts_per_tok"},
		{map[string]any{"num_local_experts": 0}, "expert_count"},
		{map[string]any{"num_local_experts": 4}, "expert_count = 4"},
		{map[string]any{"intermediate_size": 48}, "gate_up_proj"},
		{map[string]any{"rope_scaling": map[string]any{"rope_type": "linear", "factor": 2.0}}, "rope_scaling"},
		{map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 0.5, "original_max_position_embeddings": 16}}, "rope.scaling.factor"},
		{map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 2, "beta_fast": "a"}}, "beta_fast"},
	} {
		dir := t.TempDir()
		copyDir(t, hp, dir)
		editConfigJSON(t, dir, tc.fields)
		b, err := loader.Open(dir, loader.Options{})
		if err == nil {
			b.Close()
			t.Errorf("%v: loaded", tc.fields)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %q does not name %s", tc.fields, err, tc.want)
		}
	}
}

// copyDir copies the files of src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameBetas(a, b *model.Yarn) bool {
	af, as := a.Betas()
	bf, bs := b.Betas()
	return af == bf && as == bs
}

// TestGptOssBadGGUF: a GGUF whose gpt-oss.attention.sliding_window is 0 is refused by name.
func TestGptOssBadGGUF(t *testing.T) {
	p, err := gptossSynth.Plan()
	if err != nil {
		t.Fatal(err)
	}
	p.Config.SlidingWindow = 0
	path := filepath.Join(t.TempDir(), "bad.gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err == nil {
		b.Close()
		t.Fatal("window 0 loaded")
	}
	if !strings.Contains(err.Error(), "gpt-oss.attention.sliding_window") {
		t.Fatalf("error %q does not name gpt-oss.attention.sliding_window", err)
	}
}

// TestGptOssMXFP4HFMatchesGGUF: the released checkpoints' form — config.json
// quantization_config mxfp4, the experts as U8 gate_up_proj_blocks/_scales and
// down_proj_blocks/_scales ([out, in], nibbles in element order) — made from an MXFP4 GGUF's
// experts, loads with MXFP4 experts and gives bit-identical logits to the GGUF.
func TestGptOssMXFP4HFMatchesGGUF(t *testing.T) {
	o := gptossSynth
	o.ExpertType = tensor.MXFP4
	gp, hp := writeGptOss(t, o)
	mg := openGptOss(t, gp)
	set, err := safetensors.OpenDir(hp)
	if err != nil {
		t.Fatal(err)
	}
	var ts []tensor.Tensor
	for name, x := range set.Tensors {
		if strings.HasSuffix(name, ".gate_up_proj") || strings.HasSuffix(name, ".down_proj") {
			continue
		}
		c := *x
		c.Data = slices.Clone(x.Data)
		ts = append(ts, c)
	}
	set.Close()
	for l := 0; l < o.Layers; l++ {
		p := "blk." + string(rune('0'+l)) + "."
		gu, err := model.JoinInterleaved("gu", mg.Weights[p+"ffn_gate_exps.weight"], mg.Weights[p+"ffn_up_exps.weight"])
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			hf string
			t  *tensor.Tensor
		}{{"gate_up_proj", gu}, {"down_proj", mg.Weights[p+"ffn_down_exps.weight"]}} {
			b, s, err := model.MXFP4ToHF(w.t)
			if err != nil {
				t.Fatal(err)
			}
			pre := "model.layers." + string(rune('0'+l)) + ".mlp.experts." + w.hf
			b.Name, s.Name = pre+"_blocks", pre+"_scales"
			ts = append(ts, *b, *s)
		}
	}
	mx := filepath.Join(t.TempDir(), "mx")
	if err := os.MkdirAll(mx, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		b, err := os.ReadFile(filepath.Join(hp, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mx, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := safetensors.WriteSharded(mx, ts, nil, 1<<40); err != nil {
		t.Fatal(err)
	}
	editConfigJSON(t, mx, map[string]any{"quantization_config": map[string]any{"quant_method": "mxfp4",
		"modules_to_not_convert": []string{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}})
	mh := openGptOss(t, mx)
	for _, n := range []string{"blk.0.ffn_gate_exps.weight", "blk.2.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight"} {
		if mh.Weights[n].Type != tensor.MXFP4 || !slices.Equal(mh.Weights[n].Data, mg.Weights[n].Data) {
			t.Fatalf("%s: HF MXFP4 read as %s, not the GGUF's blocks", n, mh.Weights[n].Type)
		}
	}
	a, b := forwardLogits(t, mg, gptossSeqs), forwardLogits(t, mh, gptossSeqs)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("logit %d: GGUF %v, MXFP4 HF %v", i, a[i], b[i])
		}
	}
	// The wrong nibble order (ggml's) would decode other values: the repacking matters.
	w := mg.Weights["blk.0.ffn_gate_exps.weight"]
	bl, sc, _ := model.MXFP4ToHF(w)
	copy(bl.Data, w.Data[1:17])
	back, err := model.MXFP4FromHF("x", bl, sc)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(back.Data[:17], w.Data[:17]) {
		t.Fatal("ggml's nibble order read as transformers' gives the same block")
	}
	// A quant_method other than mxfp4 is refused by name.
	editConfigJSON(t, mx, map[string]any{"quantization_config": map[string]any{"quant_method": "gptq"}})
	if bd, err := loader.Open(mx, loader.Options{}); err == nil || !strings.Contains(err.Error(), "quantization_config") {
		if err == nil {
			bd.Close()
		}
		t.Fatalf("gptq: %v", err)
	}
	t.Logf("gpt-oss MXFP4 HF (_blocks/_scales) and GGUF: %d logits bit-identical", len(a))
}
