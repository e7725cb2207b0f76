// This file implements stage 3's weight gathers: each slot remembers which unit it holds, so a
// unit still in its slot is not gathered again (the last blocks, the embedding and the head
// between Forward and Backward, every unit between the micro-batches of one step), and the
// next unit in the hooks' order is gathered asynchronously into its slot while the current one
// computes. A slot is only refilled once the unit using it is done: blocks alternate between
// two slots and nn announces a unit only after the previous one finished.
package dist

import (
	"fmt"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/train/nn"
)

// ensure makes unit u's full weights ready in its slot.
func (z *ZeRO) ensure(u int) {
	s := z.slot(u)
	if z.slotUnit[s] != u {
		z.startGather(u)
	}
	if w := z.slotGather[s]; w != nil {
		z.slotGather[s] = nil
		if err := w.Wait(); err != nil {
			z.slotUnit[s] = -1
			panic(&nn.CommError{Op: fmt.Sprintf("ZeRO-3 all-gather of unit %d", u), Err: err})
		}
	}
}

// prefetch starts gathering unit u (-1: none) unless it is in its slot already or its slot is
// busy (the slot cur of the unit being used).
func (z *ZeRO) prefetch(u, cur int) {
	if u < 0 || z.Units[u].Size == 0 {
		return
	}
	if s := z.slot(u); s != cur && z.slotUnit[s] != u {
		z.startGather(u)
	}
}

func (z *ZeRO) startGather(u int) {
	s, zu := z.slot(u), z.Units[u]
	dst, src := z.wBuf[s][:z.n*zu.Shard], z.wShard[zu.Off:zu.Off+zu.Shard]
	z.slotUnit[s] = u
	z.Gathers++
	if z.dp == nil {
		copy(dst, src)
		return
	}
	z.slotGather[s] = z.dp.AllGatherAsync(comm.AsBytes(dst), comm.AsBytes(src))
}

// nextUse is the unit nn announces after u (documented order of nn.Options.BeforeUse; -1 when
// u is the last or the next is the embedding or head, which have slots of their own).
func (z *ZeRO) nextUse(u int, backward bool) int {
	last := len(z.Units) - 1 // the head
	switch {
	case !backward && u < last:
		return u + 1
	case backward && u == last:
		return u - 1
	case backward && u > 1 && u < last:
		return u - 1
	}
	return -1
}

// WeightsChanged forgets the gathered units (call it after the owned weights changed: the
// optimizer step, a restore). Pending gathers are waited for first.
func (z *ZeRO) WeightsChanged() {
	for s, w := range z.slotGather {
		if w != nil {
			w.Wait() // its error, if any, is the group's and shows at the next collective
			z.slotGather[s] = nil
		}
		z.slotUnit[s] = -1
	}
}
