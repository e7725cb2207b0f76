// This file holds what DeepSeek-V2/V3 checkpoints add to the deepseek2 family
// (family_deepseek2.go): YaRN RoPE scaling with DeepSeek's attention-scale correction, and
// DeepSeek-V3's routing (sigmoid scores, a per-expert selection bias, grouped top-k).
//
// YaRN (GGUF rope.scaling.type yarn, .factor, .original_context_length,
// .yarn_log_multiplier; config.json rope_scaling {type yarn, factor,
// original_max_position_embeddings, beta_fast, beta_slow, mscale, mscale_all_dim}): the
// RoPE angles as kernels.Yarn, with llama.cpp's deepseek2 attn_factor 1/(1 + 0.1·ln s) on
// the rotation (so cos and sin keep magnitude 1, as transformers' mscale/mscale_all_dim = 1)
// and the scores scaled by mscale²/sqrt(key_length), mscale = 1 + yarn_log_multiplier·ln s
// (transformers: yarn_get_mscale(s, mscale_all_dim), so yarn_log_multiplier = 0.1·mscale_all_dim).
//
// Routing: ExpertsBias reads blk.N.exp_probs_b.bias (HF mlp.gate.e_score_correction_bias),
// added to the scores to choose experts, not to weigh them. Grouped top-k (HF n_group,
// topk_group; GGUF expert_group_count, expert_group_used_count as later llama.cpp names
// them): the experts split into ExpertGroups equal groups, the ExpertGroupsUsed best groups
// kept (a group's score: its best expert's score (V2's group_limited_greedy), or with the
// bias the sum of its two best biased scores (V3's noaux_tc)), the top-k among their experts.
// llama.cpp c392e5094 reads the bias but has no grouped top-k.
package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// Yarn is YaRN RoPE scaling with DeepSeek's attention-scale multiplier.
type Yarn struct {
	kernels.Yarn
	LogMul float64 // rope.scaling.yarn_log_multiplier (0.1·mscale_all_dim)
}

// deepseekV3 reports whether c is written as config.json model_type deepseek_v3.
func deepseekV3(c *Config) bool { return c.ExpertsBias }

func (c *Config) checkDeepseek3() error {
	if y := c.Yarn; y != nil {
		fast, slow := y.Betas()
		switch {
		case c.Arch != "deepseek2" && c.Arch != gptossArch:
			return fmt.Errorf("model: config rope.scaling.type yarn is supported for deepseek2 and gpt-oss only, not %s", c.Arch)
		case !(y.Factor >= 1) || y.Factor > 1e6:
			return fmt.Errorf("model: config rope.scaling.factor = %v: want [1, 1e6]", y.Factor)
		case y.OrigCtx <= 0 || y.OrigCtx > 1<<40:
			return fmt.Errorf("model: config rope.scaling.original_context_length = %d: want positive", y.OrigCtx)
		case !(y.LogMul >= 0) || y.LogMul > 100:
			return fmt.Errorf("model: config rope.scaling.yarn_log_multiplier = %v: want [0, 100]", y.LogMul)
		case !(fast > 0) || !(slow > 0) || fast > 1e6 || slow > 1e6:
			return fmt.Errorf("model: config rope.scaling beta_fast %v, beta_slow %v: want positive", fast, slow)
		}
	}
	if (c.ExpertsBias || c.ExpertGroups != 0 || c.ExpertGroupsUsed != 0) && c.Arch != "deepseek2" {
		return fmt.Errorf("model: config expert_group_count / exp_probs_b are deepseek2's, not %s's", c.Arch)
	}
	g, u := c.ExpertGroups, c.ExpertGroupsUsed
	switch {
	case g == 0 && u == 0:
	case g < 1 || c.Experts%g != 0:
		return fmt.Errorf("model: config expert_group_count = %d: want a divisor of expert_count %d", g, c.Experts)
	case u < 1 || u > g:
		return fmt.Errorf("model: config expert_group_used_count = %d: want [1, expert_group_count %d]", u, g)
	case u*(c.Experts/g) < c.ExpertsUsed:
		return fmt.Errorf("model: config expert_group_used_count = %d: %d groups of %d experts hold fewer than expert_used_count %d",
			u, u, c.Experts/g, c.ExpertsUsed)
	case c.ExpertsBias && c.Experts/g < 2:
		return fmt.Errorf("model: config expert_group_count = %d: V3 group scores need 2 experts a group, have %d", g, c.Experts/g)
	}
	return nil
}

// deepseekAttnScale is the scores' scale: 1/sqrt(key_length), times mscale² with YaRN.
func deepseekAttnScale(c *Config) float64 {
	s := 1 / math.Sqrt(float64(c.HeadDim))
	if y := c.Yarn; y != nil {
		m := 1 + y.LogMul*math.Log(y.Factor)
		s *= m * m
	}
	return s
}

// deepseekRopeAttrs adds the YaRN attributes of mla_attention to a.
func deepseekRopeAttrs(c *Config, a graph.Attrs) {
	y := c.Yarn
	if y == nil {
		return
	}
	fast, slow := y.Betas()
	a["yarn_factor"] = graph.Float(y.Factor)
	a["yarn_orig_ctx"] = graph.Int(int64(y.OrigCtx))
	a["yarn_beta_fast"], a["yarn_beta_slow"] = graph.Float(fast), graph.Float(slow)
	a["mscale"] = graph.Float(1 / (1 + 0.1*math.Log(y.Factor)))
}

// deepseekMoEAttrs adds the V3 routing attributes of moe to a.
func deepseekMoEAttrs(c *Config, a graph.Attrs) {
	if c.ExpertsBias {
		a["bias"] = graph.Int(1)
	}
	if c.ExpertGroups > 1 {
		a["groups"], a["groups_used"] = graph.Int(int64(c.ExpertGroups)), graph.Int(int64(c.ExpertGroupsUsed))
		top := int64(1)
		if c.ExpertsBias {
			top = 2
		}
		a["group_top"] = graph.Int(top)
	}
}

// deepseek3FromGGUF reads the YaRN keys, the grouped top-k counts and whether the file has
// the selection bias.
func deepseek3FromGGUF(f *gguf.File, c *Config) error {
	a := c.Arch + "."
	_, c.ExpertsBias = f.Tensor(fmt.Sprintf("blk.%d.exp_probs_b.bias", c.DenseLead))
	for _, k := range []struct {
		key string
		dst *int
	}{{"expert_group_count", &c.ExpertGroups}, {"expert_group_used_count", &c.ExpertGroupsUsed}} {
		if _, ok := f.Get(a + k.key); ok {
			v, ok := f.Uint(a + k.key)
			if !ok || v > MaxFFN {
				return fmt.Errorf("%s%s is not a count in [0, %d]", a, k.key, MaxFFN)
			}
			*k.dst = int(v)
		}
	}
	if c.ExpertGroups == 1 && c.ExpertGroupsUsed <= 1 {
		c.ExpertGroups, c.ExpertGroupsUsed = 0, 0
	}
	typ, _ := f.String(a + "rope.scaling.type")
	if typ != "yarn" {
		return nil
	}
	y := &Yarn{}
	fl := func(key string, dst *float64) error {
		if _, ok := f.Get(a + key); !ok {
			return nil
		}
		v, ok := f.Float(a + key)
		if !ok {
			return fmt.Errorf("%s%s is not a number", a, key)
		}
		*dst = v
		return nil
	}
	for _, k := range []struct {
		key string
		dst *float64
	}{{"rope.scaling.factor", &y.Factor}, {"rope.scaling.yarn_log_multiplier", &y.LogMul},
		{"rope.scaling.yarn_beta_fast", &y.BetaFast}, {"rope.scaling.yarn_beta_slow", &y.BetaSlow}} {
		if err := fl(k.key, k.dst); err != nil {
			return err
		}
	}
	if y.Factor == 0 {
		y.Factor = 1
	}
	y.OrigCtx = c.CtxLen
	if _, ok := f.Get(a + "rope.scaling.original_context_length"); ok {
		v, ok := f.Uint(a + "rope.scaling.original_context_length")
		if !ok || v > 1<<40 {
			return fmt.Errorf("%srope.scaling.original_context_length is not a count", a)
		}
		y.OrigCtx = int(v)
	}
	c.Yarn = y
	return nil
}

func deepseek3ToGGUF(c *Config) []gguf.KV {
	a := c.Arch + "."
	var kv []gguf.KV
	if c.ExpertGroups > 1 {
		kv = append(kv, gguf.KV{Key: a + "expert_group_count", Value: gguf.U32(uint32(c.ExpertGroups))},
			gguf.KV{Key: a + "expert_group_used_count", Value: gguf.U32(uint32(c.ExpertGroupsUsed))})
	}
	log := 0.0
	if y := c.Yarn; y != nil {
		log = y.LogMul
		kv = append(kv, gguf.KV{Key: a + "rope.scaling.type", Value: gguf.Str("yarn")},
			gguf.KV{Key: a + "rope.scaling.factor", Value: gguf.F32(float32(y.Factor))},
			gguf.KV{Key: a + "rope.scaling.original_context_length", Value: gguf.U32(uint32(y.OrigCtx))})
		if fast, slow := y.Betas(); fast != 32 || slow != 1 {
			kv = append(kv, gguf.KV{Key: a + "rope.scaling.yarn_beta_fast", Value: gguf.F32(float32(fast))},
				gguf.KV{Key: a + "rope.scaling.yarn_beta_slow", Value: gguf.F32(float32(slow))})
		}
	}
	// llama.cpp requires the multiplier; without YaRN (freq scale 1) it changes nothing.
	return append(kv, gguf.KV{Key: a + "rope.scaling.yarn_log_multiplier", Value: gguf.F32(float32(log))})
}

// deepseek3FromHF reads rope_scaling (yarn), topk_method, n_group and topk_group.
func deepseek3FromHF(hc *hfdir.Config, c *Config, num func(string) (float64, bool, error)) error {
	c.ExpertsBias = false
	method, _ := hc.Raw["topk_method"].(string)
	if method == "" { // transformers' defaults: DeepseekV2Config greedy, DeepseekV3Config noaux_tc
		method = "greedy"
		if hc.ModelType == "deepseek_v3" {
			method = "noaux_tc"
		}
	}
	if hc.ModelType == "deepseek_v3" { // and DeepseekV3Config's other defaults
		if _, ok := hc.Raw["norm_topk_prob"]; !ok {
			c.ExpertsNorm = true
		}
		if _, ok := hc.Raw["scoring_func"]; !ok {
			c.ExpertsSigmoid = true
		}
	}
	switch method {
	case "greedy", "group_limited_greedy":
	case "noaux_tc":
		c.ExpertsBias = true
	default:
		return fmt.Errorf("config.json topk_method = %q: want greedy, group_limited_greedy or noaux_tc", method)
	}
	var g, u float64
	var err error
	if g, _, err = num("n_group"); err != nil {
		return err
	}
	if u, _, err = num("topk_group"); err != nil {
		return err
	}
	if g != float64(int(g)) || u != float64(int(u)) || g < 0 || u < 0 || g > MaxFFN || u > MaxFFN {
		return fmt.Errorf("config.json n_group = %v, topk_group = %v: want counts", g, u)
	}
	if g > 1 && method != "greedy" {
		c.ExpertGroups, c.ExpertGroupsUsed = int(g), int(u)
	}
	rs := hc.RopeScaling
	if rs == nil || rs.Type == "default" {
		return nil
	}
	if rs.Type != "yarn" {
		return fmt.Errorf("config.json rope_scaling type %q: deepseek2 takes yarn", rs.Type)
	}
	get := func(key string, def float64) (float64, error) {
		switch v := rs.Raw[key].(type) {
		case nil:
			return def, nil
		case json.Number:
			return v.Float64()
		case float64:
			return v, nil
		}
		return 0, fmt.Errorf("config.json rope_scaling.%s = %v is not a number", key, rs.Raw[key])
	}
	y := &Yarn{Yarn: kernels.Yarn{Factor: rs.Factor, OrigCtx: rs.OriginalMaxPositionEmbeddings}}
	var ms, msAll float64
	for _, k := range []struct {
		key string
		dst *float64
		def float64
	}{{"beta_fast", &y.BetaFast, 32}, {"beta_slow", &y.BetaSlow, 1}, {"mscale", &ms, 1}, {"mscale_all_dim", &msAll, 0}} {
		if *k.dst, err = get(k.key, k.def); err != nil {
			return err
		}
	}
	if ms != msAll && y.Factor > 1 {
		return fmt.Errorf("config.json rope_scaling mscale = %v, mscale_all_dim = %v: only equal ones are supported (as llama.cpp)", ms, msAll)
	}
	y.LogMul = 0.1 * msAll
	c.Yarn = y
	return nil
}

// deepseek3ToHF writes rope_scaling, topk_method, n_group and topk_group.
func deepseek3ToHF(c *Config, hc *hfdir.Config) {
	method, g, u := "greedy", 1, 1
	if c.ExpertGroups > 1 {
		method, g, u = "group_limited_greedy", c.ExpertGroups, c.ExpertGroupsUsed
	}
	if c.ExpertsBias {
		method = "noaux_tc"
	}
	hc.Raw["topk_method"], hc.Raw["n_group"], hc.Raw["topk_group"] = method, g, u
	hc.RopeScaling = nil
	if y := c.Yarn; y != nil {
		fast, slow := y.Betas()
		hc.RopeScaling = &hfdir.RopeScaling{Type: "yarn", Factor: y.Factor, OriginalMaxPositionEmbeddings: y.OrigCtx,
			Raw: map[string]any{"beta_fast": fast, "beta_slow": slow, "mscale": y.LogMul * 10, "mscale_all_dim": y.LogMul * 10}}
	}
}
