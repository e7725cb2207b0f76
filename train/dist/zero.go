// This file implements ZeRO (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
// Trillion Parameter Models", SC 2020) stages 1-3 over the data-parallel group, sharding each
// model unit (nn's units: the embedding, each block, the head) across the DP ranks as FSDP
// does: unit u of S values is padded to DP·ceil(S/DP) and DP rank d owns values
// [d·ceil(S/DP), (d+1)·ceil(S/DP)) of it.
//
//   - stage 1: full weights and gradients; at the last micro-batch each unit's gradient is
//     reduce-scattered as soon as Backward reports it ready (into the rank's own piece of the
//     same buffer); the optimizer (moments only for the owned pieces) updates the owned
//     weights, then every unit is all-gathered.
//   - stage 2: gradients are not kept whole: the embedding and the head have one gradient
//     buffer each and the blocks share two, alternating; BeforeUse(u, backward) waits for the
//     reduce-scatter still reading the buffer and clears it, GradReady(u) reduce-scatters it
//     into a small buffer that is then added to the owned gradient shard.
//   - stage 3: weights are not kept whole either: only the owned shard persists, and each
//     unit is all-gathered into a reusable buffer (same slots as the gradients) in BeforeUse,
//     in Forward and again in Backward.
//
// A failed collective inside a hook panics with *nn.CommError, which the trainer recovers.
package dist

import (
	"fmt"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/train/nn"
)

// ZUnit is one unit's sharding on this rank.
type ZUnit struct {
	Size   int // values of the unit here (0: this rank's model does not hold it)
	Shard  int // values per DP rank, ceil(Size/DP)
	Lo, Hi int // this rank's owned values [Lo, Hi) of the unit (Hi-Lo < Shard at the tail)
	Off    int // offset of this rank's shard in the shard buffers (moments, gShard, wShard)
}

// ZeRO is one rank's sharded state and the hooks that move it.
type ZeRO struct {
	Stage int
	dp    *comm.Group
	rank  int
	n     int
	Units []ZUnit
	total int // Σ Shard: length of the shard buffers

	wFull, gFull   [][]float32 // per unit, padded to n·Shard (wFull: stages 1-2; gFull: stage 1)
	wShard, gShard []float32   // owned shards, concatenated (wShard: stage 3; gShard: stages 2-3)
	wBuf, gBuf     [][]float32 // stage 2-3 slots (see slot); wBuf only in stage 3
	tmp            [][]float32 // per slot: reduce-scatter destination before the add into gShard
	slotPending    []pendingRS // per slot: the reduce-scatter reading that slot's gradient buffer
	pending        []*comm.Work
	last           bool         // this Backward is the step's last micro-batch
	slotUnit       []int        // stage 3: the unit whose weights each slot holds (-1: none)
	slotGather     []*comm.Work // stage 3: the all-gather filling each slot (nil: done)
	Gathers        int64        // stage 3: unit all-gathers started
}

type pendingRS struct {
	w    *comm.Work // nil with one rank (the copy is done)
	unit int
	set  bool
}

// NewZeRO shards units (nn.Units of this rank's model) over dp (nil: one rank, which owns
// everything) for stage 1, 2 or 3 and allocates the buffers the stage keeps.
func NewZeRO(stage int, dp *comm.Group, units []nn.Unit) (*ZeRO, error) {
	if stage < 1 || stage > 3 {
		return nil, fmt.Errorf("dist: ZeRO stage %d: want 1, 2 or 3", stage)
	}
	z := &ZeRO{Stage: stage, dp: dp, n: 1}
	if dp != nil {
		z.rank, z.n = dp.Rank(), dp.Size()
	}
	for _, u := range units {
		zu := ZUnit{Size: u.Size, Shard: (u.Size + z.n - 1) / z.n, Off: z.total}
		zu.Lo, zu.Hi = min(z.rank*zu.Shard, u.Size), min((z.rank+1)*zu.Shard, u.Size)
		z.total += zu.Shard
		z.Units = append(z.Units, zu)
	}
	padded := func(u ZUnit) []float32 {
		if u.Size == 0 {
			return nil
		}
		return make([]float32, z.n*u.Shard)
	}
	if stage <= 2 {
		for _, u := range z.Units {
			z.wFull = append(z.wFull, padded(u))
		}
	}
	if stage == 1 {
		for _, u := range z.Units {
			z.gFull = append(z.gFull, padded(u))
		}
		return z, nil
	}
	z.gShard = make([]float32, z.total)
	if stage == 3 {
		z.wShard = make([]float32, z.total)
	}
	slotShard := make([]int, 4)
	for i, u := range z.Units {
		s := z.slot(i)
		slotShard[s] = max(slotShard[s], u.Shard)
	}
	z.slotPending = make([]pendingRS, 4)
	for _, sh := range slotShard {
		z.gBuf = append(z.gBuf, make([]float32, z.n*sh))
		z.tmp = append(z.tmp, make([]float32, sh))
		if stage == 3 {
			z.wBuf = append(z.wBuf, make([]float32, z.n*sh))
			z.slotUnit, z.slotGather = append(z.slotUnit, -1), append(z.slotGather, nil)
		}
	}
	return z, nil
}

// slot is the reusable buffer of unit u in stages 2-3: the embedding 0, the head 1, the blocks
// 2 and 3 in turn (a block's buffer is free again when the block two further on starts).
func (z *ZeRO) slot(u int) int {
	switch {
	case u == 0:
		return 0
	case u == len(z.Units)-1:
		return 1
	}
	return 2 + u%2
}

// Options sets opt's per-unit storage and hooks for the stage.
func (z *ZeRO) Options(opt *nn.Options) {
	opt.W, opt.G = make([][]float32, len(z.Units)), make([][]float32, len(z.Units))
	for i, u := range z.Units {
		if u.Size == 0 {
			continue
		}
		switch z.Stage {
		case 1:
			opt.W[i], opt.G[i] = z.wFull[i][:u.Size], z.gFull[i][:u.Size]
		case 2:
			opt.W[i], opt.G[i] = z.wFull[i][:u.Size], z.gBuf[z.slot(i)][:u.Size]
		case 3:
			opt.W[i], opt.G[i] = z.wBuf[z.slot(i)][:u.Size], z.gBuf[z.slot(i)][:u.Size]
		}
	}
	opt.BeforeUse, opt.GradReady = z.BeforeUse, z.GradReady
}

// BeginStep clears the gradients of a new optimizer step.
func (z *ZeRO) BeginStep() {
	for _, g := range z.gFull {
		clear(g)
	}
	clear(z.gShard)
}

// BeginBackward is called before each Backward; last marks the step's last micro-batch.
func (z *ZeRO) BeginBackward(last bool) { z.last = last }

// BeforeUse is the model's BeforeUse hook.
func (z *ZeRO) BeforeUse(u int, backward bool) {
	if z.Units[u].Size == 0 {
		return
	}
	s := z.slot(u)
	if backward && z.Stage >= 2 {
		z.settle(s)
		clear(z.gBuf[s])
	}
	if z.Stage == 3 {
		z.ensure(u)
		z.prefetch(z.nextUse(u, backward), s)
	}
}

// GradReady is the model's GradReady hook: it starts unit u's reduce-scatter.
func (z *ZeRO) GradReady(u int) {
	zu := z.Units[u]
	if zu.Size == 0 {
		return
	}
	switch z.Stage {
	case 1:
		if z.last { // earlier micro-batches accumulate in the full gradient
			g := z.gFull[u]
			z.pending = append(z.pending, z.reduceScatter(g[z.rank*zu.Shard:(z.rank+1)*zu.Shard], g))
		}
	default:
		s := z.slot(u)
		z.slotPending[s] = pendingRS{w: z.reduceScatter(z.tmp[s][:zu.Shard], z.gBuf[s][:z.n*zu.Shard]), unit: u, set: true}
	}
}

func (z *ZeRO) reduceScatter(dst, src []float32) *comm.Work {
	if z.dp == nil {
		copy(dst, src)
		return nil
	}
	return z.dp.ReduceScatterAsync(dst, src, comm.Sum)
}

func (z *ZeRO) allGather(dst, src []float32) error {
	if z.dp == nil {
		copy(dst, src)
		return nil
	}
	return z.dp.AllGather(comm.AsBytes(dst), comm.AsBytes(src))
}

// settle waits for slot s's reduce-scatter and adds its result into the gradient shard.
func (z *ZeRO) settle(s int) {
	p := z.slotPending[s]
	if !p.set {
		return
	}
	z.slotPending[s] = pendingRS{}
	if p.w != nil {
		if err := p.w.Wait(); err != nil {
			panic(&nn.CommError{Op: fmt.Sprintf("ZeRO reduce-scatter of unit %d", p.unit), Err: err})
		}
	}
	zu := z.Units[p.unit]
	g := z.gShard[zu.Off : zu.Off+zu.Shard]
	for i, x := range z.tmp[s][:zu.Shard] {
		g[i] += x
	}
}

// EndStep waits for every reduce-scatter of the step (call it after the last Backward, before
// the optimizer).
func (z *ZeRO) EndStep() (err error) {
	defer nn.CatchComm(&err)
	for _, w := range z.pending {
		if w != nil {
			if e := w.Wait(); e != nil && err == nil {
				err = fmt.Errorf("dist: ZeRO reduce-scatter: %w", e)
			}
		}
	}
	z.pending = z.pending[:0]
	for s := range z.slotPending {
		z.settle(s)
	}
	return err
}

// Piece returns unit u's owned weights and gradients (Hi-Lo values each) that the optimizer
// updates; their moments are at [Off, Off+Hi-Lo) of the shard space.
func (z *ZeRO) Piece(u int) (w, g []float32) {
	zu := z.Units[u]
	n := zu.Hi - zu.Lo
	switch z.Stage {
	case 1:
		return z.wFull[u][zu.Lo:zu.Hi], z.gFull[u][zu.Lo:zu.Hi]
	case 2:
		return z.wFull[u][zu.Lo:zu.Hi], z.gShard[zu.Off : zu.Off+n]
	}
	return z.wShard[zu.Off : zu.Off+n], z.gShard[zu.Off : zu.Off+n]
}

// ShardLen is the length of the shard space (Σ per-unit shards): the moments' length.
func (z *ZeRO) ShardLen() int { return z.total }

// GatherWeights all-gathers every unit's updated weights after the optimizer step (stages
// 1-2; stage 3 gathers on use).
func (z *ZeRO) GatherWeights() error {
	if z.Stage == 3 {
		z.WeightsChanged()
		return nil
	}
	if z.dp == nil {
		return nil
	}
	var ws []*comm.Work
	for i, u := range z.Units {
		if u.Size == 0 {
			continue
		}
		w := z.wFull[i]
		ws = append(ws, z.dp.AllGatherAsync(comm.AsBytes(w), comm.AsBytes(w[z.rank*u.Shard:(z.rank+1)*u.Shard])))
	}
	var first error
	for _, w := range ws {
		if err := w.Wait(); err != nil && first == nil {
			first = fmt.Errorf("dist: ZeRO all-gather of the weights: %w", err)
		}
	}
	return first
}

// OwnedWeights is the stage-3 weight shard of unit u (Hi-Lo values), for initialisation and
// checkpoints; in stages 1-2 it is the owned part of the full weights.
func (z *ZeRO) OwnedWeights(u int) []float32 {
	w, _ := z.Piece(u)
	return w
}

// WeightShards is the stage-3 weight shard space (nil in stages 1-2): unit u's owned value x
// (Lo <= x < Hi) is at Off + x - Lo, as its moments are.
func (z *ZeRO) WeightShards() []float32 { return z.wShard }
