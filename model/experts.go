// Expert counts of mixture-of-experts models, read from GGUF metadata (<arch>.expert_count,
// <arch>.expert_used_count) and config.json (num_local_experts or num_experts,
// num_experts_per_tok). Absurd counts are refused with a message naming the value before the
// architecture or any size is looked at further; a family whose builder has no
// mixture-of-experts feed-forward (Family.Experts false) refuses any experts; and the notes
// of expertNote name the count when a file's feed-forward tensors do not fit it.
package model

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/llmcloud/llmcloud/format/gguf"
)

// MaxExperts bounds an expert count: far above any released mixture-of-experts model.
const MaxExperts = 1 << 16

// checkExperts refuses absurd expert counts. A count of 0 is a dense model, whatever the used
// count says; a mixture of experts uses 1 to count experts per token.
func checkExperts(count, used int, countName, usedName string) error {
	switch {
	case count < 0 || count > MaxExperts:
		return fmt.Errorf("%s = %d out of range [0, %d]", countName, count, MaxExperts)
	case count == 0:
		return nil
	case used > count:
		return fmt.Errorf("%s = %d, more experts per token than %s = %d", usedName, used, countName, count)
	case used < 1:
		return fmt.Errorf("%s = %d, a mixture of %s = %d experts must use 1 to %d per token", usedName, used, countName, count, count)
	}
	return nil
}

// expertNote is what an error about the tensor name (a GGUF name) of a configuration c adds
// when the tensor is a feed-forward one, whose set and shapes the expert count decides.
func expertNote(c *Config, name string) string {
	for _, s := range []string{".ffn_gate_inp.", "_exps.", "_shexp.", ".ffn_gate.", ".ffn_up.", ".ffn_down."} {
		if strings.Contains(name, s) {
			if c.Experts == 0 {
				return " (no expert_count: a dense feed-forward)"
			}
			w := ""
			if c.ExpertFFN > 0 {
				w += fmt.Sprintf(", expert_feed_forward_length = %d", c.ExpertFFN)
			}
			if c.SharedFFN > 0 {
				w += fmt.Sprintf(", expert_shared_feed_forward_length = %d", c.SharedFFN)
			}
			return fmt.Sprintf(" (expert_count = %d, expert_used_count = %d%s: a mixture-of-experts feed-forward)", c.Experts, c.ExpertsUsed, w)
		}
	}
	return ""
}

// ggufExperts reads <arch>.expert_count and <arch>.expert_used_count (0 when absent).
func ggufExperts(f *gguf.File, arch string) (count, used int, err error) {
	read := func(key string) (int, error) {
		v, ok := f.Get(key)
		if !ok {
			return 0, nil
		}
		n, ok := f.Uint(key)
		if !ok {
			return 0, fmt.Errorf("%s = %#v is not a count", key, v.V)
		}
		if n > MaxExperts {
			return 0, fmt.Errorf("%s = %d out of range [0, %d]", key, n, MaxExperts)
		}
		return int(n), nil
	}
	if count, err = read(arch + ".expert_count"); err != nil {
		return 0, 0, err
	}
	if used, err = read(arch + ".expert_used_count"); err != nil {
		return 0, 0, err
	}
	return count, used, checkExperts(count, used, arch+".expert_count", arch+".expert_used_count")
}

// hfExperts reads num_local_experts (Mixtral) or num_experts (Qwen MoE), and
// num_experts_per_tok, from config.json's raw fields (0 when absent or null).
func hfExperts(raw map[string]any) (count, used int, err error) {
	read := func(key string) (int, error) {
		v, ok := raw[key]
		if !ok || v == nil {
			return 0, nil
		}
		var f float64
		switch x := v.(type) {
		case json.Number:
			if f, err = x.Float64(); err != nil {
				return 0, fmt.Errorf("config.json %s = %#v is not a count", key, x.String())
			}
		case float64:
			f = x
		default:
			return 0, fmt.Errorf("config.json %s = %#v is not a count", key, v)
		}
		if f != math.Trunc(f) || f < 0 || f > MaxExperts {
			return 0, fmt.Errorf("config.json %s = %v out of range [0, %d]", key, v, MaxExperts)
		}
		return int(f), nil
	}
	countName := "num_local_experts"
	if count, err = read(countName); err != nil {
		return 0, 0, err
	}
	if count == 0 {
		countName = "num_experts"
		if count, err = read(countName); err != nil {
			return 0, 0, err
		}
	}
	if used, err = read("num_experts_per_tok"); err != nil {
		return 0, 0, err
	}
	return count, used, checkExperts(count, used, "config.json "+countName, "config.json num_experts_per_tok")
}

// ExpertNote is expertNote for the loaders' own checks: the note naming the expert count that
// an error about the feed-forward tensor name (a GGUF name) of c adds, "" for other tensors.
func ExpertNote(c *Config, name string) string { return expertNote(c, name) }
