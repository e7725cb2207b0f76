// This file sizes the KV groups of a model for the engine: the model's groups (model.KVGroups)
// with a window below the maximum model length become windowed pools, the rest (windows that
// never bind included) one windowless pool, listed first. A windowed pool needs at most what
// MaxNumSeqs sequences hold in their windows plus one step's tokens (and at least one
// maximum-length sequence, so a sequence alone always fits); a byte budget is split so that
// every group gets the same number of blocks (today's single pool), then the bytes a windowed
// group cannot use go to the windowless pool.

package engine

import (
	"slices"

	"github.com/llmcloud/llmcloud/model"
)

// kvLayout is the model's KV groups in the engine's order, and their pools in cfg.KVGroups.
type kvLayout struct {
	groups []model.KVGroup // nil: one pool for every layer (model.NewPagedKV)
}

// planKVGroups fills cfg.KVGroups for m (cfg.NumBlocks and MaxModelLenTokens resolved; budget
// > 0: the KV bytes that sized NumBlocks). One windowless group leaves cfg as it is.
func planKVGroups(m *model.Model, cfg *Config, budget int64) kvLayout {
	mc := &m.Config
	var win, full []model.KVGroup
	var fullLayers []int
	for _, g := range m.KVGroups() {
		if g.Window > 0 && g.Window < cfg.MaxModelLenTokens {
			win = append(win, g)
		} else {
			fullLayers = append(fullLayers, g.Layers...)
		}
	}
	if len(win) == 0 {
		cfg.KVGroups = nil
		return kvLayout{}
	}
	if len(fullLayers) > 0 {
		slices.Sort(fullLayers)
		full = []model.KVGroup{{Layers: fullLayers}}
	}
	groups := append(full, win...)
	perLayer := m.KVBytesPerTokenCache() / int64(max(mc.Layers, 1)) // K and V rows of one layer
	bs := cfg.BlockSizeTokens
	cfg.KVGroups = make([]KVGroup, len(groups))
	var spent int64
	for g, gr := range groups {
		kg := KVGroup{Window: gr.Window, BytesPerToken: perLayer * int64(len(gr.Layers))}
		if gr.Window > 0 && len(groups) > 1 {
			need := cfg.MaxNumSeqs*(BlocksForLength(gr.Window-1, bs, 0)+2) + BlocksForLength(cfg.MaxNumBatchedTokens, bs, 0)
			need = max(need, BlocksForLength(cfg.MaxModelLenTokens, bs, 0))
			kg.NumBlocks = min(need, cfg.NumBlocks)
			spent += int64(kg.NumBlocks) * int64(bs) * kg.BytesPerToken
		}
		cfg.KVGroups[g] = kg
	}
	if budget > 0 && len(full) > 0 {
		// the windowless pool takes what the windowed ones leave
		if n := NumBlocksForBudget(budget-spent, bs, cfg.KVGroups[0].BytesPerToken); n > cfg.NumBlocks {
			cfg.NumBlocks = n
		}
	}
	return kvLayout{groups: groups}
}

// newPagedKV allocates the pool of layout l for cfg.
func (l kvLayout) newPagedKV(m *model.Model, cfg Config) (*model.PagedKV, error) {
	if l.groups == nil {
		return m.NewPagedKV(cfg.NumBlocks, cfg.BlockSizeTokens)
	}
	return m.NewPagedKVGroups(l.groups, cfg.GroupBlocks(), cfg.BlockSizeTokens)
}
