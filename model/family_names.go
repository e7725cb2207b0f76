// This file implements NameMap: a family's table of Hugging Face tensor names and the GGUF
// names llmcloud keeps weights under ("model.layers.3.mlp.up_proj.weight" <->
// "blk.3.ffn_up.weight"), read both ways.
package model

import (
	"fmt"
	"strconv"
	"strings"
)

// NameMap maps Hugging Face tensor names to GGUF names. Block tensors are BlockPrefix, the
// block number, ".", then a key of Block (GGUF: "blk.", the number, ".", its value); other
// tensors are keys of Global.
type NameMap struct {
	Global      map[string]string // whole HF name -> whole GGUF name ("lm_head.weight": "output.weight")
	BlockPrefix string            // HF prefix of the blocks' tensors ("model.layers.")
	Block       map[string]string // HF suffix in a block -> GGUF suffix ("mlp.up_proj.weight": "ffn_up.weight")
	Skip        []string          // HF suffixes in a block that are not weights (rotary inv_freq buffers)
}

// GGUF returns the GGUF name of the HF tensor hf, "" for a tensor llmcloud does not use
// (Skip), or an error for a name the family does not know.
func (m *NameMap) GGUF(hf string) (string, error) {
	if g, ok := m.Global[hf]; ok {
		return g, nil
	}
	if rest, ok := strings.CutPrefix(hf, m.BlockPrefix); ok && m.BlockPrefix != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i > 0 && i < len(rest) && rest[i] == '.' {
			suffix := rest[i+1:]
			for _, s := range m.Skip {
				if suffix == s {
					return "", nil
				}
			}
			if g, ok := m.Block[suffix]; ok {
				l, _ := strconv.Atoi(rest[:i])
				return fmt.Sprintf("blk.%d.%s", l, g), nil
			}
		}
	}
	return "", fmt.Errorf("unknown tensor %s", hf)
}

// HF returns the Hugging Face name of the GGUF tensor name, false when it has none.
func (m *NameMap) HF(name string) (string, bool) {
	for hf, g := range m.Global {
		if g == name {
			return hf, true
		}
	}
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok || m.BlockPrefix == "" {
		return "", false
	}
	i := strings.IndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	if l, err := strconv.Atoi(rest[:i]); err != nil || strconv.Itoa(l) != rest[:i] {
		return "", false
	}
	for hf, g := range m.Block {
		if g == rest[i+1:] {
			return m.BlockPrefix + rest[:i] + "." + hf, true
		}
	}
	return "", false
}
