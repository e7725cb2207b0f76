// Expert counts of mixture-of-experts models, read from GGUF metadata (<arch>.expert_count,
// <arch>.expert_used_count) and config.json (num_local_experts or num_experts,
// num_experts_per_tok). llmcloud runs dense models only: a model declaring experts is refused
// with a message saying so, and absurd counts with one naming the value, before the
// architecture or any size is looked at further.
package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/format/gguf"
)

// MaxExperts bounds an expert count: far above any released mixture-of-experts model.
const MaxExperts = 1 << 16

// checkExperts refuses absurd expert counts, then any mixture of experts. A count of 0 is a
// dense model, whatever the used count says.
func checkExperts(count, used int, countName, usedName string) error {
	switch {
	case count < 0 || count > MaxExperts:
		return fmt.Errorf("%s = %d out of range [0, %d]", countName, count, MaxExperts)
	case count == 0:
		return nil
	case used < 0 || used > count:
		return fmt.Errorf("%s = %d, more experts per token than %s = %d", usedName, used, countName, count)
	}
	return fmt.Errorf("mixture-of-experts models (expert_count=%d) are not supported yet", count)
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
