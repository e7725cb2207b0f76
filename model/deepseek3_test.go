// DeepSeek-V2 with YaRN and DeepSeek-V3's routing: llama.cpp's perplexity and greedy
// continuation on two synth models (YaRN at a context 4x / 8x the original; V3's sigmoid
// scores, selection bias, renormalised and scaled weights), each also shown to depend on what
// it checks (without YaRN, without the bias, the perplexity moves); the paged executor against
// the float64 reference with grouped top-k (which llama.cpp c392e5094 lacks) and the Hugging
// Face round trip (deepseek_v3, rope_scaling yarn); bad configurations.
package model_test

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/eval"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

// The synth commands of synth-deepseek2-yarn.json and synth-deepseek3.json.
var (
	deepseek2YarnSynth = synth.Options{Arch: "deepseek2", Dim: 64, Layers: 3, Heads: 4, HeadDim: 24, RopeDim: 8, VHeadDim: 16,
		KVLoraRank: 32, QLoraRank: 48, DenseLead: 1, Experts: 4, ExpertsUsed: 2, ExpertFFN: 32, SharedFFN: 64, FFN: 128,
		ExpertsScale: 1.5, CtxLen: 128, YarnFactor: 4, YarnOrigCtx: 32, YarnLogMul: 0.0707, Std: 0.1, Seed: 3,
		Name: "synth-deepseek2-yarn"}
	deepseek3Synth = synth.Options{Arch: "deepseek2", Dim: 64, Layers: 3, Heads: 4, HeadDim: 24, RopeDim: 8, VHeadDim: 16,
		KVLoraRank: 32, QLoraRank: 48, DenseLead: 1, Experts: 8, ExpertsUsed: 3, ExpertFFN: 16, SharedFFN: 16, FFN: 128,
		ExpertsSigmoid: true, ExpertsBias: true, ExpertsNorm: true, ExpertsScale: 2.5, CtxLen: 128,
		YarnFactor: 8, YarnOrigCtx: 16, YarnLogMul: 0.1, Std: 0.1, Seed: 4, Name: "synth-deepseek3"}
)

func TestDeepseek3MatchesLlamaCpp(t *testing.T) {
	for _, c := range []struct {
		ref string
		o   synth.Options
	}{{"synth-deepseek2-yarn.json", deepseek2YarnSynth}, {"synth-deepseek3.json", deepseek3Synth}} {
		t.Run(c.ref, func(t *testing.T) {
			checkLlamaCpp(t, c.ref, c.o)
			checkSensitive(t, c.ref, c.o)
		})
	}
}

// checkSensitive: the same model without YaRN (and, for V3, without the selection bias)
// scores measurably differently, so the llama.cpp agreement covers them.
func checkSensitive(t *testing.T, refFile string, o synth.Options) {
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
	bd, err := loader.Open(writeMixtral(t, t.TempDir(), o), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	ids := bd.Tok.Encode(string(text[:rc.TextBytes]), true, false)
	edits := map[string]func(c *model.Config){"no yarn": func(c *model.Config) { c.Yarn = nil }}
	if o.ExpertsBias {
		edits["no selection bias"] = func(c *model.Config) {
			c.ExpertsBias = false
		}
	}
	for name, edit := range edits {
		c := bd.Model.Config
		edit(&c)
		ws := bd.Model.Weights
		if !c.ExpertsBias {
			ws = map[string]*tensor.Tensor{}
			for k, v := range bd.Model.Weights {
				if !strings.Contains(k, "exp_probs_b") {
					ws[k] = v
				}
			}
		}
		m, err := model.New(c, ws)
		if err != nil {
			t.Fatal(err)
		}
		res, err := eval.PerplexityChunks(m, ids, rc.Ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		rel := math.Abs(res.PPL-rc.PPL) / rc.PPL
		t.Logf("%s: PPL %.4f, llama-perplexity %.4f (relative difference %.2g)", name, res.PPL, rc.PPL, rel)
		if rel < 1e-3 {
			t.Errorf("%s: PPL %.4f within %.2g of llama.cpp's: the check does not see it", name, res.PPL, rel)
		}
	}
}

// TestDeepseek3PagedVsReference: the paged executor against the float64 reference and the
// Hugging Face round trip, with YaRN, the selection bias and grouped top-k (noaux_tc: 4
// groups of 2, 2 searched) and V2's group_limited_greedy (softmax, 2 groups of 4, 1 searched).
func TestDeepseek3PagedVsReference(t *testing.T) {
	v3 := deepseek3Synth
	v3.ExpertGroups, v3.ExpertGroupsUsed, v3.Name = 4, 2, "v3-grouped"
	v2 := deepseek2YarnSynth
	v2.Experts, v2.ExpertsUsed, v2.ExpertGroups, v2.ExpertGroupsUsed, v2.Name = 8, 2, 2, 1, "v2-grouped"
	for _, o := range []synth.Options{deepseek3Synth, v3, v2} {
		t.Run(o.Name, func(t *testing.T) {
			checkDeepseek2Paged(t, o)
		})
	}
}

func TestDeepseek3BadConfig(t *testing.T) {
	base, err := deepseek3Synth.Config()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		edit  func(c *model.Config)
	}{
		{"rope.scaling.factor", func(c *model.Config) { c.Yarn = &model.Yarn{Yarn: c.Yarn.Yarn}; c.Yarn.Factor = 0.5 }},
		{"original_context_length", func(c *model.Config) { c.Yarn = &model.Yarn{Yarn: c.Yarn.Yarn}; c.Yarn.OrigCtx = 0 }},
		{"yarn_log_multiplier", func(c *model.Config) { c.Yarn = &model.Yarn{Yarn: c.Yarn.Yarn, LogMul: math.NaN()} }},
		{"expert_group_count", func(c *model.Config) { c.ExpertGroups, c.ExpertGroupsUsed = 3, 1 }},
		{"expert_group_used_count", func(c *model.Config) { c.ExpertGroups, c.ExpertGroupsUsed = 4, 5 }},
		{"expert_group_used_count", func(c *model.Config) { c.ExpertGroups, c.ExpertGroupsUsed = 4, 1 }}, // 2 experts < 3 used
		{"expert_group_count", func(c *model.Config) { c.ExpertGroups, c.ExpertGroupsUsed = 8, 4 }},      // 1 a group, top-2 sums
		{"yarn", func(c *model.Config) { c.Arch = "llama"; c.KVLoraRank = 0; c.Experts = 0; c.ExpertsBias = false }},
	} {
		c := base
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one naming it", tc.field, err)
		}
	}
}

// TestDeepseek3HFConfig: config.json fields and transformers' defaults (DeepseekV3Config:
// noaux_tc, sigmoid, renormalised; DeepseekV2Config: greedy, so n_group alone groups nothing),
// DeepSeek-V2's real rope_scaling, and refusals naming the field.
func TestDeepseek3HFConfig(t *testing.T) {
	base := `"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
		"num_key_value_heads": 4, "vocab_size": 300, "max_position_embeddings": 512, "kv_lora_rank": 32, "q_lora_rank": 48,
		"qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 8, "num_experts_per_tok": 2,
		"moe_intermediate_size": 16, "n_shared_experts": 1, "first_k_dense_replace": 1`
	for _, tc := range []struct {
		name, json string
		check      func(c model.Config) bool
		err        string
	}{
		{"v3 defaults", `"model_type": "deepseek_v3", "n_group": 4, "topk_group": 2`, func(c model.Config) bool {
			return c.ExpertsBias && c.ExpertsSigmoid && c.ExpertsNorm && c.ExpertGroups == 4 && c.ExpertGroupsUsed == 2
		}, ""},
		{"v2 greedy default", `"model_type": "deepseek_v2", "n_group": 4, "topk_group": 1`, func(c model.Config) bool {
			return !c.ExpertsBias && !c.ExpertsSigmoid && c.ExpertGroups == 0
		}, ""},
		{"v2 grouped, yarn", `"model_type": "deepseek_v2", "topk_method": "group_limited_greedy", "n_group": 4, "topk_group": 2,
			"rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 128, "beta_fast": 32, "beta_slow": 1,
			"mscale": 0.707, "mscale_all_dim": 0.707}`, func(c model.Config) bool {
			return c.ExpertGroups == 4 && c.Yarn != nil && c.Yarn.Factor == 40 && c.Yarn.OrigCtx == 128 && math.Abs(c.Yarn.LogMul-0.0707) < 1e-12
		}, ""},
		{"mscale", `"model_type": "deepseek_v2", "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 128,
			"mscale": 1, "mscale_all_dim": 0.707}`, nil, "mscale"},
		{"topk_method", `"model_type": "deepseek_v3", "topk_method": "magic"`, nil, "topk_method"},
		{"topk_group", `"model_type": "deepseek_v3", "n_group": 4, "topk_group": 5`, nil, "expert_group_used_count"},
		{"rope_scaling", `"model_type": "deepseek_v2", "rope_scaling": {"type": "linear", "factor": 2}`, nil, "rope_scaling"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/config.json", []byte("{"+base+", "+tc.json+"}"), 0o644); err != nil {
			t.Fatal(err)
		}
		hc, err := hfdir.ReadConfig(dir + "/config.json")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c, err := model.ConfigFromHF(hc)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && !tc.check(c):
			t.Errorf("%s: config %+v (yarn %+v)", tc.name, c, c.Yarn)
		}
	}
}
