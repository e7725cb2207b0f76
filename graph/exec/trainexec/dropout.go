// This file runs graph's dropout op. The mask of element i of a dropout node is drawn from
// a hash of (seed, key, the node's salt, i): no state advances, so the backward (the same op
// applied to dy) reuses the forward's mask, a recomputed forward draws it again, and a run
// resumed at step s draws what the uninterrupted run drew there. The trainer sets the key per
// step and micro-batch (SetDropout); outside training (the default, and validation) dropout is
// the identity.
package trainexec

import (
	"github.com/llmcloud/llmcloud/graph"
)

// dropoutState is what SetDropout set.
type dropoutState struct {
	on        bool
	seed, key uint64
}

// SetDropout turns the graph's dropout nodes on (training: the masks of seed and key) or off
// (the identity) for the following Forward and Backward calls.
func (p *Program) SetDropout(on bool, seed, key uint64) {
	p.drop = dropoutState{on: on, seed: seed, key: key}
}

func (p *Program) dropout(n *graph.Node) func() {
	prob := n.Attrs.Float("p", 0)
	salt := uint64(n.Attrs.Int("salt", 0))
	scale := float32(1 / (1 - prob))
	x, out := n.Args[0], n.Outs[0]
	return func() {
		o, xs := p.cur(out), p.cur(x)
		d := p.drop
		if !d.on || prob == 0 {
			copy(o, xs)
			return
		}
		p.pool.For(len(o), 4096, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if graph.DropoutKeep(d.seed, d.key, salt, i, prob) {
					o[i] = xs[i] * scale
				} else {
					o[i] = 0
				}
			}
		})
	}
}
