// This file is PEFT's adapter_config.json for LoRA: the fields llmcloud reads and writes, the
// rest kept as read.
package lora

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// Config is a LoRA adapter_config.json as PEFT writes it.
type Config struct {
	PeftType      string             `json:"peft_type"`
	TaskType      string             `json:"task_type,omitempty"`
	R             int                `json:"r"`
	LoraAlpha     float64            `json:"lora_alpha"`
	LoraDropout   float64            `json:"lora_dropout"`
	TargetModules Targets            `json:"target_modules"`
	BaseModel     string             `json:"base_model_name_or_path"`
	Bias          string             `json:"bias"`
	FanInFanOut   bool               `json:"fan_in_fan_out"`
	UseRSLoRA     bool               `json:"use_rslora"`
	UseDoRA       bool               `json:"use_dora"`
	RankPattern   map[string]int     `json:"rank_pattern"`
	AlphaPattern  map[string]float64 `json:"alpha_pattern"`
	ModulesToSave []string           `json:"modules_to_save"`
	InferenceMode bool               `json:"inference_mode"`
}

// Targets is target_modules: a list of module names, or one string (a regular expression
// matched against the whole module path, or "all-linear").
type Targets struct {
	List    []string
	Pattern string
}

func (t *Targets) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Targets{}
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = Targets{Pattern: s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("target_modules: want a list of names or a string")
	}
	*t = Targets{List: l}
	return nil
}

func (t Targets) MarshalJSON() ([]byte, error) {
	if t.List == nil && t.Pattern != "" {
		return json.Marshal(t.Pattern)
	}
	return json.Marshal(t.List)
}

// parseConfig reads and checks adapter_config.json's bytes (file names it in errors).
func parseConfig(b []byte, file string) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("lora: %s: %w", file, err)
	}
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("lora: %s: %s = %v: %s", file, field, v, why)
	}
	switch {
	case c.PeftType != "LORA":
		return c, bad("peft_type", c.PeftType, "only LORA adapters are supported")
	case c.R <= 0:
		return c, bad("r", c.R, "the rank must be positive")
	case c.LoraAlpha <= 0:
		return c, bad("lora_alpha", c.LoraAlpha, "must be positive")
	case c.Bias != "" && c.Bias != "none":
		return c, bad("bias", c.Bias, "adapters with trained biases are not supported")
	case c.FanInFanOut:
		return c, bad("fan_in_fan_out", true, "Conv1D (GPT-2) layouts are not supported")
	case c.UseDoRA:
		return c, bad("use_dora", true, "DoRA is not supported")
	case len(c.ModulesToSave) > 0:
		return c, bad("modules_to_save", c.ModulesToSave, "fully trained modules are not supported")
	}
	for _, m := range c.TargetModules.List {
		if _, ok := Modules[m]; !ok {
			return c, bad("target_modules", m, "not one of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj")
		}
	}
	if p := c.TargetModules.Pattern; p != "" && p != "all-linear" {
		if _, err := regexp.Compile(p); err != nil {
			return c, bad("target_modules", p, err.Error())
		}
	}
	return c, nil
}

// patternFor returns the value of the first key of pat (sorted) that matches the module path
// (PEFT's rule: the key is the path's suffix after a dot, or the whole path; keys may be
// regular expressions).
func patternFor[V any](pat map[string]V, path string) (V, bool) {
	var zero V
	keys := make([]string, 0, len(pat))
	for k := range pat {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == path || (len(path) > len(k) && path[len(path)-len(k)-1] == '.' && path[len(path)-len(k):] == k) {
			return pat[k], true
		}
		if re, err := regexp.Compile(`^(?:.*\.)?(?:` + k + `)$`); err == nil && re.MatchString(path) {
			return pat[k], true
		}
	}
	return zero, false
}

// moduleParams returns the rank and alpha config gives the module at path.
func (c *Config) moduleParams(path string) (int, float64) {
	r, a := c.R, c.LoraAlpha
	if v, ok := patternFor(c.RankPattern, path); ok {
		r = v
	}
	if v, ok := patternFor(c.AlphaPattern, path); ok {
		a = v
	}
	return r, a
}
