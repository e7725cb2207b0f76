// This file reads a batch's expert loads: how many rows each moe layer routed to each expert
// over the batch's forwards (graph/exec's Program.ExpertLoads), for /metrics.
package model

import (
	"fmt"
	"strings"
)

// ExpertLoads returns, per layer of a mixture-of-experts model, the rows b's forwards have
// routed to each expert so far (nil before the first forward or for a dense model). The
// result is a fresh copy.
func (b *Batch) ExpertLoads() map[int][]uint64 {
	if b.prog == nil {
		return nil
	}
	var out map[int][]uint64
	for name, loads := range b.prog.ExpertLoads() { // by router weight: blk.N.ffn_gate_inp.weight
		var l int
		if _, err := fmt.Sscanf(strings.TrimPrefix(name, "blk."), "%d.", &l); err != nil {
			continue
		}
		if out == nil {
			out = map[int][]uint64{}
		}
		out[l] = loads
	}
	return out
}
