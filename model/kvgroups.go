// This file implements KV groups: the layers whose attention keeps keys and values under the
// same sliding window (Gemma 2: the local, even layers under the window and the global ones
// without; Phi-3: every layer under one window; Llama: one group, no window). A serving
// engine gives each group its own block pool and each sequence one block table per group, so
// a windowed group's blocks before a sequence's window can go back to the pool while the
// global group's keep growing. The windows come from the serving graph's attention ops (their
// "window" attribute), so every family that sets one gets its groups without more code.
package model

import (
	"fmt"
	"slices"
)

// KVGroup is a set of layers attending under the same window.
type KVGroup struct {
	Window int   // > 0: a row at position p reads positions p-Window+1..p; 0: every position
	Layers []int // ascending
}

// KVGroups returns m's KV groups, ordered by their first layer (group 0 holds layer 0). A
// model without windows has one group of every layer.
func (m *Model) KVGroups() []KVGroup {
	win := make([]int, m.Config.Layers)
	if m.sg != nil {
		for _, n := range m.sg.Nodes {
			if n.Op != "attention" {
				continue
			}
			if l := int(n.Attrs.Int("layer", -1)); l >= 0 && l < len(win) {
				win[l] = int(n.Attrs.Int("window", 0))
			}
		}
	}
	var gs []KVGroup
	for l, w := range win {
		i := slices.IndexFunc(gs, func(g KVGroup) bool { return g.Window == w })
		if i < 0 {
			gs = append(gs, KVGroup{Window: w})
			i = len(gs) - 1
		}
		gs[i].Layers = append(gs[i].Layers, l)
	}
	return gs
}

// LayerGroups maps each layer to its index in groups.
func LayerGroups(groups []KVGroup, layers int) []int {
	out := make([]int, layers)
	for g, gr := range groups {
		for _, l := range gr.Layers {
			if l < layers {
				out[l] = g
			}
		}
	}
	return out
}

// NewPagedKVGroups allocates a pool for m's KV groups: layer l's rows get numBlocks[g] blocks
// of blockSize slots, g its group (groups as KVGroups returns them). Block ids of a group's
// tables index that group's layers only. With one group it is NewPagedKV.
func (m *Model) NewPagedKVGroups(groups []KVGroup, numBlocks []int, blockSize int) (*PagedKV, error) {
	if len(groups) != len(numBlocks) || len(groups) == 0 {
		return nil, fmt.Errorf("model: paged KV for %d groups with %d block counts", len(groups), len(numBlocks))
	}
	if len(groups) == 1 {
		kv, err := m.NewPagedKV(numBlocks[0], blockSize)
		if err == nil {
			kv.Windows = []int{groups[0].Window}
		}
		return kv, err
	}
	kd, vd := m.cacheDims()
	kv := &PagedKV{NumBlocks: numBlocks[0], BlockSize: blockSize, KVDim: kd, VDim: vd,
		Group: LayerGroups(groups, m.Config.Layers), GroupBlocks: slices.Clone(numBlocks)}
	if err := kv.setFormats(m, m.KVCacheDType); err != nil {
		return nil, err
	}
	var total int64
	for g, gr := range groups {
		if numBlocks[g] <= 0 || blockSize <= 0 {
			return nil, fmt.Errorf("model: paged KV group %d of %d blocks of %d tokens", g, numBlocks[g], blockSize)
		}
		kv.Windows = append(kv.Windows, gr.Window)
		total += int64(len(gr.Layers)) * int64(numBlocks[g]*blockSize) * kv.rowBytes()
	}
	commit := total <= PrefaultLimit
	for l := range m.Config.Layers {
		kv.addLayer(numBlocks[kv.Group[l]]*blockSize, commit)
	}
	return kv, nil
}

// numGroups is how many block tables a sequence of kv needs.
func (kv *PagedKV) numGroups() int { return max(len(kv.GroupBlocks), 1) }

// groupBlocks is the pool size of group g in blocks.
func (kv *PagedKV) groupBlocks(g int) int {
	if g < len(kv.GroupBlocks) {
		return kv.GroupBlocks[g]
	}
	return kv.NumBlocks
}

// groupWindow is group g's window (0: none).
func (kv *PagedKV) groupWindow(g int) int {
	if g < len(kv.Windows) {
		return kv.Windows[g]
	}
	return 0
}
