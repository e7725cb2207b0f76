// Test of LoadHF: stories260K (GGUF, adjacent-pair RoPE) is rewritten as a Hugging Face
// directory (rotate-half layout, HF names, config.json, model.safetensors). LoadHF must give
// the GGUF model's logits exactly, and an independent float64 forward in NeoX mode on the
// unpermuted HF weights must agree, which checks the test's own layout conversion.
package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/tensor"
)

// toHFLayout undoes llama.cpp's permutation: HF row s*hd/2+i holds GGUF row 2i+s.
func toHFLayout(t *tensor.Tensor, heads int) *tensor.Tensor {
	rows := t.Shape[0]
	rb := len(t.Data) / rows
	hd := rows / heads
	out := &tensor.Tensor{Type: t.Type, Shape: t.Shape, Data: make([]byte, len(t.Data))}
	for h := 0; h < heads; h++ {
		for s := 0; s < 2; s++ {
			for i := 0; i < hd/2; i++ {
				hf, gg := h*hd+s*hd/2+i, h*hd+2*i+s
				copy(out.Data[hf*rb:(hf+1)*rb], t.Data[gg*rb:(gg+1)*rb])
			}
		}
	}
	return out
}

func TestLoadHFMatchesGGUF(t *testing.T) {
	g := openRef(t, []string{"models", "stories260K", "stories260K-f32.gguf"})
	cfg := g.Config
	inv := map[string]string{"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}
	for hfSuffix, gg := range llamaNames.Block {
		for l := 0; l < cfg.Layers; l++ {
			inv[fmt.Sprintf("blk.%d.%s", l, gg)] = fmt.Sprintf("model.layers.%d.%s", l, hfSuffix)
		}
	}
	var hf []tensor.Tensor
	neox := map[string]*tensor.Tensor{} // HF-layout weights under GGUF names, for refForward
	for name, w := range g.Weights {
		tt := w
		var l int
		var kind string
		if n, _ := fmt.Sscanf(name, "blk.%d.attn_%1s", &l, &kind); n == 2 {
			switch name {
			case fmt.Sprintf("blk.%d.attn_q.weight", l):
				tt = toHFLayout(w, cfg.Heads)
			case fmt.Sprintf("blk.%d.attn_k.weight", l):
				tt = toHFLayout(w, cfg.KVHeads)
			}
		}
		neox[name] = tt
		hfName, ok := inv[name]
		if !ok {
			t.Fatalf("no HF name for %s", name)
		}
		hf = append(hf, tensor.Tensor{Name: hfName, Type: tt.Type, Shape: tt.Shape, Data: tt.Data})
	}
	dir := t.TempDir()
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), hf, nil); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": %d,
 "intermediate_size": %d, "num_hidden_layers": %d, "num_attention_heads": %d, "num_key_value_heads": %d,
 "vocab_size": %d, "max_position_embeddings": 512, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
 "tie_word_embeddings": %v, "torch_dtype": "float32"}`, cfg.Dim, cfg.FFN, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.Vocab, cfg.Tied)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := LoadHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Config.RopeNeoX || h.Config.Tied != cfg.Tied {
		t.Fatalf("config %+v", h.Config)
	}
	toks := []int{1, 403, 407, 261, 378, 30, 99, 7}
	a, err := g.Forward(g.NewCache(len(toks)), toks, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Forward(h.NewCache(len(toks)), toks, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("logit %d: GGUF %v, HF %v", i, a[i], b[i])
		}
	}
	ncfg := cfg
	ncfg.RopeNeoX = true
	ref := refForward(t, ncfg, neox, toks)
	var maxd float64
	for i := range ref {
		for j := range ref[i] {
			maxd = math.Max(maxd, math.Abs(ref[i][j]-float64(a[i*cfg.Vocab+j])))
		}
	}
	t.Logf("HF-layout float64 NeoX forward vs GGUF normal-mode logits: %.3g", maxd)
	if maxd > 1e-4 {
		t.Fatalf("HF layout in NeoX mode differs from GGUF by %g", maxd)
	}
	if _, err := HFName(&cfg, "model.layers.0.mlp.weird.weight"); err == nil {
		t.Fatal("unknown HF tensor accepted")
	}
}
