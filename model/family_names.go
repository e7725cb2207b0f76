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
	// Experts maps HF suffixes in a block with "*" for the expert number to the GGUF suffix of
	// the stacked tensor ("block_sparse_moe.experts.*.w1.weight": "ffn_gate_exps.weight"):
	// expert e's HF matrix [rows, cols] is sub-tensor e of the GGUF [experts, rows, cols] one.
	Experts map[string]string
}

// Expert returns the GGUF name of the stacked tensor the HF tensor hf is one expert of, and
// the expert's number; ok is false when hf is not an expert's tensor.
func (m *NameMap) Expert(hf string) (name string, expert int, ok bool) {
	rest, found := strings.CutPrefix(hf, m.BlockPrefix)
	if !found || m.BlockPrefix == "" || len(m.Experts) == 0 {
		return "", 0, false
	}
	l, rest, found := cutNumber(rest)
	if !found {
		return "", 0, false
	}
	for pat, g := range m.Experts {
		pre, post, _ := strings.Cut(pat, "*")
		r, found := strings.CutPrefix(rest, pre)
		if !found {
			continue
		}
		num, after, found := cutNumber(r)
		if found && "."+after == post { // patterns are "prefix.*.suffix"
			return fmt.Sprintf("blk.%d.%s", l, g), num, true
		}
	}
	return "", 0, false
}

// ExpertHF returns the HF name of expert e of the stacked GGUF tensor name; ok is false when
// name is not a stacked expert tensor of the map.
func (m *NameMap) ExpertHF(name string, e int) (string, bool) {
	rest, found := strings.CutPrefix(name, "blk.")
	if !found || m.BlockPrefix == "" {
		return "", false
	}
	l, suffix, found := cutNumber(rest)
	if !found {
		return "", false
	}
	for pat, g := range m.Experts {
		if g == suffix {
			return m.BlockPrefix + strconv.Itoa(l) + "." + strings.Replace(pat, "*", strconv.Itoa(e), 1), true
		}
	}
	return "", false
}

// cutNumber splits "12.rest" into 12 and "rest" (a number without leading zeros, then a dot).
func cutNumber(s string) (int, string, bool) {
	num, rest, found := strings.Cut(s, ".")
	if !found || num == "" {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || strconv.Itoa(n) != num {
		return 0, "", false
	}
	return n, rest, true
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
