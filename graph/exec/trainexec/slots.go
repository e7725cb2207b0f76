// This file compiles several activation slots (micro-batches in flight, pipeline schedules):
// one program per slot over the same parameters. A slot's forward and backward never run
// at the same time as another slot's, so every buffer not kept from a forward to its backward
// (the forward's and the backward's temporaries; with recomputation, all a block computes)
// is one buffer shared by all slots: each slot keeps only what crosses from its forward to
// its backward.
package trainexec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// arena holds the buffers the slots' programs share, by size; every program's plan takes
// them in the same order.
type arena struct{ bufs map[int][][]float32 }

// take returns the i-th shared buffer of n values.
func (a *arena) take(n, i int) []float32 {
	for len(a.bufs[n]) <= i {
		a.bufs[n] = append(a.bufs[n], make([]float32, n))
	}
	return a.bufs[n][i]
}

// transient reports whether a value live over instructions [start, end] of total is not kept
// from the forward to the backward nor after the program.
func (p *Program) transient(start, end, total int) bool {
	return end < total && (end < p.nf || start >= p.nf)
}

// ForModelSlots is ForModelWith for slots activation slots: one program per slot over the
// same params, sharing the buffers not kept from a forward to its backward. The programs
// must run one at a time (one's Forward or Backward at once; they may interleave between).
func ForModelSlots(cfg model.Config, params []Param, maxB, maxT int, pool *kernels.Pool, opt Options, slots int) ([]*Program, error) {
	if slots < 1 {
		return nil, fmt.Errorf("trainexec: %d activation slots", slots)
	}
	if slots == 1 {
		p, err := ForModelWith(cfg, params, maxB, maxT, pool, opt)
		return []*Program{p}, err
	}
	ar := &arena{bufs: map[int][][]float32{}}
	var ps []*Program
	for range slots {
		p, err := forModelWith(cfg, params, maxB, maxT, pool, opt, ar)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// SharedBytes is the memory of the buffers this program shares with the other slots'.
func (p *Program) SharedBytes() int64 { return p.shared }
