// Tests of the family registry: every registered family's tensors have Hugging Face names
// that map back to themselves, and registration refuses duplicates and incomplete families.
package model

import (
	"strings"
	"testing"
)

func TestFamiliesNamesRoundTrip(t *testing.T) {
	if len(Families()) < 4 {
		t.Fatalf("%d families registered, want at least llama, mistral, qwen2, qwen3", len(Families()))
	}
	for _, f := range Families() {
		if f.HFModelType == "" {
			continue
		}
		if FamilyOfHF(f.HFModelType) != f {
			t.Errorf("%s: FamilyOfHF(%q) is not the family", f.Arch, f.HFModelType)
		}
		if f.HFMoEModelType != "" && FamilyOfHF(f.HFMoEModelType) != f {
			t.Errorf("%s: FamilyOfHF(%q) is not the family", f.Arch, f.HFMoEModelType)
		}
		var configs []Config
		if !f.ExpertsOnly {
			configs = append(configs, Config{Arch: f.Arch, Dim: 8, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 4, FFN: 16, Vocab: 10,
				QKVBias: true, QKNorm: true})
		}
		if f.Experts { // the mixture-of-experts form: the experts' stacked tensors by NameMap.Experts
			c := Config{Arch: f.Arch, Dim: 8, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 4, FFN: 16, Vocab: 10,
				QKVBias: true, QKNorm: true, Experts: 3, ExpertsUsed: 2}
			if f.Fix != nil {
				f.Fix(&c)
			}
			configs = append(configs, c)
		}
		for _, c := range configs {
			for name, shape := range HFShapes(&c) { // the names an HF checkpoint holds (gpt-oss: gate/up fused)
				if hf, ok := f.Names.ExpertHF(name, 2); ok && len(shape) == 3 {
					if g, e, ok := f.Names.Expert(hf); !ok || g != name || e != 2 {
						t.Errorf("%s: %s expert 2 -> %s -> %q %d %v", f.Arch, name, hf, g, e, ok)
					}
					continue
				}
				hf, ok := f.Names.HF(name)
				if !ok {
					t.Errorf("%s: %s has no Hugging Face name", f.Arch, name)
					continue
				}
				if g, err := f.Names.GGUF(hf); err != nil || g != name {
					t.Errorf("%s: %s -> %s -> %q, %v", f.Arch, name, hf, g, err)
				}
			}
		}
		if _, ok := f.Names.HF("blk.01.attn_q.weight"); ok {
			t.Errorf("%s: a non-canonical block number got a Hugging Face name", f.Arch)
		}
		if _, err := f.Names.GGUF("model.layers.x.mlp.up_proj.weight"); err == nil {
			t.Errorf("%s: a block name without a number was accepted", f.Arch)
		}
	}
	for _, hf := range []string{"model.layers.0.block_sparse_moe.experts.01.w1.weight", "model.layers.0.block_sparse_moe.experts.x.w1.weight",
		"model.layers.0.block_sparse_moe.experts.1.w4.weight", "model.layers.00.block_sparse_moe.experts.1.w1.weight"} {
		if g, e, ok := llamaNames.Expert(hf); ok {
			t.Errorf("%s: read as expert %d of %s", hf, e, g)
		}
	}
	if g, e, ok := llamaNames.Expert("model.layers.12.block_sparse_moe.experts.7.w2.weight"); !ok || g != "blk.12.ffn_down_exps.weight" || e != 7 {
		t.Errorf("Mixtral's w2 of expert 7 in block 12: %q %d %v", g, e, ok)
	}
	if _, err := llamaNames.GGUF("model.layers.0.block_sparse_moe.experts.1.w1.weight"); err == nil {
		t.Errorf("an expert's tensor has a one-to-one GGUF name")
	}
	if g, err := llamaNames.GGUF("model.layers.3.self_attn.rotary_emb.inv_freq"); err != nil || g != "" {
		t.Errorf("rotary inv_freq: %q, %v; want skipped", g, err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	llama := *FamilyOf("llama")
	for _, tc := range []struct {
		name string
		f    Family
		want string
	}{
		{"duplicate arch", llama, "registered twice"},
		{"no arch", Family{}, "without Arch"},
		{"no builder", Family{Arch: "x-nobuild", Shapes: llama.Shapes}, "lacks Shapes or Build"},
		{"no usual values", Family{Arch: "x-novals", Shapes: llama.Shapes, Build: llama.Build}, "usual"},
		{"duplicate model_type", Family{Arch: "x-dup", HFModelType: "qwen2", Shapes: llama.Shapes, Build: llama.Build,
			RopeTheta: 1, NormEps: 1}, "model_type qwen2 registered twice"},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("%s: panic %v, want one containing %q", tc.name, r, tc.want)
				}
			}()
			f := tc.f
			Register(&f)
		}()
		if tc.f.Arch != "" && tc.f.Arch != "llama" && FamilyOf(tc.f.Arch) != nil {
			t.Errorf("%s: registered despite the panic", tc.name)
		}
	}
}
