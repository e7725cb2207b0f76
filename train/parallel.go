// This file implements NewParallel and the trainer's part of a distributed run: the grid from
// the config and the world size, this rank's rows of the global batch, and the reduction of
// gradients over the data-parallel group. Batch semantics (docs/distributed-training.md):
// Config.Batch is the global micro-batch; every rank reads the same Batch×Seq window and
// data-parallel rank d trains rows [d·Batch/DP, (d+1)·Batch/DP); the gradients are summed over
// DP and scaled by 1/DP, so the update is the one-process update on the whole batch.
package train

import (
	"fmt"
	"log/slog"
	"math"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/dist"
	"github.com/llmcloud/llmcloud/train/nn"
)

// parallel is one rank's place in a distributed run and the data-parallel machinery of its
// step (zero_state.go holds ZeRO's side). The one-process run has a 1x1x1 grid and a nil mesh.
type parallel struct {
	grid       dist.Grid
	mesh       *dist.Mesh // nil: one process
	rows, row0 int        // this rank trains global rows [row0, row0+rows)

	opt         nn.Options    // the model's options (storage, hooks, TP group)
	loc         []paramLoc    // each parameter's unit and offset in it (Params order)
	zero        *dist.ZeRO    // ZeRO stage 1-3 (nil: DDP)
	buckets     *dist.Buckets // DDP's gradient buckets (nil: one data-parallel rank or ZeRO)
	bucketBytes int

	views []view    // what the optimizer updates
	flatG []float32 // the flat gradient (DDP)
	// normParts are the gradient values this rank counts in the global norm and normGroups
	// the groups its sum of squares is added over: every element of the whole model counted
	// exactly once.
	normParts  [][]float32
	normGroups []*comm.Group
	pipe       *pipeStage // this rank's pipeline stage (nil: PP = 1)
}

// paramLoc is where a parameter sits: its unit and its offset in the unit's storage.
type paramLoc struct{ unit, off int }

// NewParallel builds this rank's trainer of a run over world (nil or one rank: the
// one-process run, as New). Every rank of world calls it with the same cfg and data; each
// initializes the full model from cfg.Seed and keeps its part, so nothing depends on the world
// size. The grid is cfg.DP x cfg.PP x cfg.TP (see Config).
func NewParallel(cfg Config, d Data, log *slog.Logger, world *comm.Group) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	size := 1
	if world != nil {
		size = world.Size()
	}
	grid, err := dist.NewGrid(size, cfg.DP, cfg.TP, cfg.PP)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	switch {
	case cfg.Batch%grid.DP != 0:
		return nil, fmt.Errorf("train: --batch %d (the global micro-batch) is not a multiple of the %d data-parallel ranks", cfg.Batch, grid.DP)
	case grid.PP > 1 && cfg.ZeroStage > 0:
		// ZeRO reduce-scatters a unit's gradient from its GradReady hook, before the pipeline
		// has summed a tied embedding's two uses and across micro-batches it does not know
		// are the last: not supported yet (pipeline stages use DDP).
		return nil, fmt.Errorf("train: --zero-stage %d with --pp %d is not supported (pipeline stages use DDP: --zero-stage 0)", cfg.ZeroStage, grid.PP)
	}
	par := &parallel{grid: grid, rows: cfg.Batch / grid.DP, bucketBytes: int(cfg.BucketMB * (1 << 20))}
	if par.bucketBytes == 0 {
		par.bucketBytes = 4 << 20
	}
	if world != nil && size > 1 {
		if par.mesh, err = dist.NewMesh(world, grid); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		par.row0 = par.mesh.Coord.DP * par.rows
		if grid.PP > 1 {
			if par.pipe, err = newPipeStage(cfg, grid, par.mesh.Coord, par.rows); err != nil {
				par.mesh.Close()
				return nil, err
			}
		}
	}
	if log != nil && par.mesh != nil {
		log = log.With("rank", par.mesh.Rank)
	}
	t, err := newLocal(cfg, d, log, par)
	if err == nil && par.pipe != nil {
		err = par.pipe.start(t, par.mesh)
	}
	if err != nil {
		if par.pipe != nil {
			par.pipe.close()
		}
		if par.mesh != nil {
			par.mesh.Close()
		}
		return nil, err
	}
	if par.mesh != nil {
		t.log.Info("distributed run", "grid", grid.String(), "rank", par.mesh.Rank,
			"coord", fmt.Sprintf("dp %d pp %d tp %d", par.mesh.Coord.DP, par.mesh.Coord.PP, par.mesh.Coord.TP),
			"rows", fmt.Sprintf("[%d, %d) of %d", par.row0, par.row0+par.rows, cfg.Batch))
	}
	return t, nil
}

// Close releases the trainer's process groups (not the world, which its caller owns).
func (t *Trainer) Close() error {
	if t.par.pipe != nil {
		t.par.pipe.close()
	}
	if t.par.mesh != nil {
		return t.par.mesh.Close()
	}
	return nil
}

// Rank is this trainer's world rank (0 in a one-process run).
func (t *Trainer) Rank() int {
	if t.par.mesh == nil {
		return 0
	}
	return t.par.mesh.Rank
}

// WorldSize is the number of ranks of the run.
func (t *Trainer) WorldSize() int { return t.par.grid.World() }

// myRows is this rank's rows of a global (Batch, seq) buffer.
func (p *parallel) myRows(x []int32, seq int) []int32 {
	return x[p.row0*seq : (p.row0+p.rows)*seq]
}

// dpRank is this rank's data-parallel rank.
func (p *parallel) dpRank() int {
	if p.mesh == nil {
		return 0
	}
	return p.mesh.Coord.DP
}

// tpGroup is the tensor-parallel group (nil: no tensor parallelism).
func (p *parallel) tpGroup() *comm.Group {
	if p.mesh == nil {
		return nil
	}
	return p.mesh.TP
}

// prepare decides the model's storage and hooks before it is built: ZeRO's buffers, or the
// hook that launches DDP's buckets.
func (p *parallel) prepare(cfg Config, mc model.Config, opt *nn.Options) error {
	units, err := nn.Units(mc, *opt)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	for u, un := range units {
		off := 0
		for _, q := range un.Params {
			p.loc = append(p.loc, paramLoc{unit: u, off: off})
			off += product(q.Shape)
		}
	}
	switch {
	case cfg.ZeroStage > 0:
		if p.zero, err = dist.NewZeRO(cfg.ZeroStage, p.dpGroup(), units); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		p.zero.Options(opt)
	case p.dpGroup() != nil && p.pipe == nil:
		opt.GradReady = func(u int) { p.buckets.GradReady(u) }
	}
	p.opt = *opt
	return nil
}

// attach finishes the trainer once its model exists: initial weights from seed, DDP's
// buckets, the optimizer and what it updates, and the parts of the global norm.
func (p *parallel) attach(t *Trainer, seed uint64) error {
	net := t.Net
	if p.zero != nil && p.zero.Stage == 3 {
		// Only the owned shards persist: draw each whole unit and keep this rank's piece.
		for u, zu := range p.zero.Units {
			if zu.Size == 0 {
				continue
			}
			full := make([]float32, zu.Size)
			if err := nn.InitUnit(t.Model, p.opt, u, seed, full); err != nil {
				return fmt.Errorf("train: %w", err)
			}
			copy(p.zero.OwnedWeights(u), full[zu.Lo:zu.Hi])
		}
	} else {
		net.Init(seed)
	}
	tpRank, _ := net.TP()
	// A gradient element is counted once in the global norm: tensor-parallel shards by their
	// rank, replicated tensors (norms) by TP rank 0, a tied token_embd by the first pipeline
	// stage (the last holds a copy); data-parallel replicas hold the same reduced gradient
	// (under ZeRO each DP rank counts its own piece).
	counted := func(name string) bool {
		return (nn.SplitOf(name) != nn.Replicated || tpRank == 0) && (p.pipe == nil || p.pipe.owns(name))
	}
	if p.zero != nil {
		t.opt = NewAdamW(p.zero.ShardLen(), nil, t.pool)
		p.views, p.normParts = p.zeroViews(net, counted)
		p.normGroups = append(p.normGroups, p.dpGroup())
	} else {
		w, g := net.Flat()
		spans := paramSpans(net)
		t.opt = NewAdamW(len(w), spans, t.pool)
		p.views = spanViews(spans, w, g)
		p.flatG = g
		p.normParts = [][]float32{g}
		if p.tpGroup() != nil || p.pipe != nil {
			p.normParts = nil
			for _, q := range net.Params() {
				if counted(q.Name) {
					p.normParts = append(p.normParts, q.G)
				}
			}
		}
		if dp := p.dpGroup(); dp != nil && p.pipe == nil {
			unitG := make([][]float32, nn.NumUnits(t.Model))
			for u := range unitG {
				_, unitG[u] = net.Unit(u)
			}
			var err error
			if p.buckets, err = dist.NewBuckets(dp, g, unitG, p.bucketBytes); err != nil {
				return fmt.Errorf("train: %w", err)
			}
		}
	}
	p.normGroups = append(p.normGroups, p.tpGroup())
	if p.pipe != nil {
		p.normGroups = append(p.normGroups, p.mesh.PP)
	}
	return nil
}

// beginStep clears the gradients of a new optimizer step.
func (p *parallel) beginStep(net *nn.Model) {
	net.ZeroGrad()
	if p.zero != nil {
		p.zero.BeginStep()
	}
}

// beginBackward and endBackward bracket each Backward; last marks the step's last one.
func (p *parallel) beginBackward(last bool) {
	switch {
	case p.zero != nil:
		p.zero.BeginBackward(last)
	case p.buckets != nil:
		p.buckets.BeginBackward(last)
	}
}

func (p *parallel) endBackward() {
	if p.buckets != nil {
		p.buckets.EndBackward()
	}
}

// finishGrads waits for the step's gradient reductions.
func (p *parallel) finishGrads() error {
	var err error
	switch {
	case p.zero != nil:
		err = p.zero.EndStep()
	case p.buckets != nil:
		err = p.buckets.Wait()
	default: // pipeline stages: the naive DDP, one allreduce of the whole gradient
		err = dist.SumGrads(p.dpGroup(), p.flatG)
	}
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// gradNorm is the global L2 norm of scale·(the gradient) over the whole model.
func (p *parallel) gradNorm(o *AdamW, scale float32) (float64, error) {
	sq := o.SumSq(p.normParts, scale)
	for _, grp := range p.normGroups {
		if err := dist.SumScalars(grp, &sq); err != nil {
			return 0, fmt.Errorf("train: gradient norm: %w", err)
		}
	}
	return math.Sqrt(sq), nil
}

// update applies the optimizer to this rank's views and, under ZeRO stages 1-2, gathers the
// updated weights.
func (p *parallel) update(o *AdamW, h Hyper, norm float64) error {
	o.updateViews(p.views, h, clipScale(h, norm))
	if p.zero != nil {
		if err := p.zero.GatherWeights(); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	return nil
}

// dpGroup is the data-parallel group (nil: one data-parallel rank).
func (p *parallel) dpGroup() *comm.Group {
	if p.mesh == nil {
		return nil
	}
	return p.mesh.DP
}

// writes reports whether this rank writes the run's files (log, curve, checkpoints, exports).
func (p *parallel) writes() bool { return p.mesh == nil || p.mesh.Rank == 0 }

// Memory is this rank's measured state memory next to the ZeRO paper's formula.
func (t *Trainer) Memory() dist.Memory {
	optim := 4 * int64(len(t.opt.M)+len(t.opt.V))
	if t.par.zero != nil {
		return t.par.zero.Memory(optim)
	}
	w, g := t.Net.Flat()
	return dist.Memory{Stage: 0, DP: t.par.grid.DP, Psi: int64(len(w)), PsiPadded: int64(len(w)),
		ParamsBytes: 4 * int64(len(w)), GradsBytes: 4 * int64(len(g)), OptimBytes: optim}
}

// Overlap reports DDP's gradient buckets: how many allreduces were launched during Backward
// and how many of those finished before that Backward returned (0, 0 without buckets).
func (t *Trainer) Overlap() (buckets int, launched, finishedEarly int64) {
	if t.par.buckets == nil {
		return 0, 0, 0
	}
	l, e := t.par.buckets.Overlap()
	return t.par.buckets.NumBuckets(), l, e
}

// ZeROGathers is the number of unit all-gathers ZeRO-3 started so far (0 otherwise).
func (t *Trainer) ZeROGathers() int64 {
	if t.par.zero == nil {
		return 0
	}
	return t.par.zero.Gathers
}
