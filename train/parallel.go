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
	"github.com/llmcloud/llmcloud/train/dist"
	"github.com/llmcloud/llmcloud/train/nn"
)

// parallel is one rank's place in a distributed run. The zero value is not valid; the
// one-process run has a 1x1x1 grid and a nil mesh.
type parallel struct {
	grid       dist.Grid
	mesh       *dist.Mesh // nil: one process
	rows, row0 int        // this rank trains global rows [row0, row0+rows)
	// normRanges are the ranges of the local flat gradient this rank counts in the global
	// norm (nil: all), normGroups the groups its sum of squares is added over: every element
	// of the whole model counted exactly once.
	normRanges []span
	normGroups []*comm.Group
	pipe       *pipeStage // this rank's pipeline stage (nil: PP = 1)
}

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
	case cfg.ZeroStage > 0:
		return nil, fmt.Errorf("train: --zero-stage %d is not available yet", cfg.ZeroStage)
	}
	par := parallel{grid: grid, rows: cfg.Batch / grid.DP}
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

// setNormRanges decides which gradient elements this rank counts in the global norm. Under
// tensor parallelism the split tensors' shards are disjoint (every TP rank counts its own)
// and replicated tensors (norm weights) hold the same gradient on every TP rank (TP rank 0
// counts them); pipeline stages hold disjoint units except a tied token_embd, whose copy on
// the last stage the first stage counts; data-parallel replicas hold the same reduced
// gradient, so the sum runs over the TP group, then the pipeline group.
func (p *parallel) setNormRanges(net *nn.Model) {
	tp := p.tpGroup()
	if tp == nil && p.pipe == nil {
		return
	}
	w, _ := net.Flat()
	p.normRanges = []span{}
	for _, q := range net.Params() {
		if tp != nil && nn.SplitOf(q.Name) == nn.Replicated && tp.Rank() != 0 {
			continue
		}
		if p.pipe != nil && !p.pipe.owns(q.Name) {
			continue
		}
		lo := offsetIn(w, q.W)
		p.normRanges = append(p.normRanges, span{lo: lo, hi: lo + len(q.W)})
	}
	if tp != nil {
		p.normGroups = append(p.normGroups, tp)
	}
	if p.pipe != nil {
		p.normGroups = append(p.normGroups, p.mesh.PP)
	}
}

// gradNorm is the global L2 norm of scale·g over the whole model.
func (p *parallel) gradNorm(o *AdamW, g []float32, scale float32) (float64, error) {
	sq := o.SumSq(g, scale, p.normRanges)
	for _, grp := range p.normGroups {
		if err := dist.SumScalars(grp, &sq); err != nil {
			return 0, fmt.Errorf("train: gradient norm: %w", err)
		}
	}
	return math.Sqrt(sq), nil
}

// dpGroup is the data-parallel group (nil: one data-parallel rank).
func (p *parallel) dpGroup() *comm.Group {
	if p.mesh == nil {
		return nil
	}
	return p.mesh.DP
}

// reduceGrads sums the flat gradient g over the data-parallel ranks.
func (p *parallel) reduceGrads(g []float32) error {
	if err := dist.SumGrads(p.dpGroup(), g); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// writes reports whether this rank writes the run's files (log, curve, checkpoints, exports).
func (p *parallel) writes() bool { return p.mesh == nil || p.mesh.Rank == 0 }
