// Package dist is the trainer's distributed layer: the DP x PP x TP grid of ranks and its
// process groups (Mesh), data-parallel gradient reduction (DDP, bucketed and overlapping
// backward) and ZeRO stages 1-3 (sharded optimizer state, gradients and parameters), with the
// per-rank memory accounting the ZeRO paper's formulas predict. See
// docs/distributed-training.md.
//
// This file implements Grid: the pure arithmetic of the grid (no communication). world =
// DP·PP·TP and rank = pp·(DP·TP) + dp·TP + tp, Megatron-LM's order: the TP ranks of one
// (pp, dp) are adjacent, then data-parallel, then pipeline stages.
package dist

import "fmt"

// Grid is the shape of a run's ranks.
type Grid struct {
	DP, TP, PP int
}

// Coord is one rank's place in the grid.
type Coord struct {
	DP, TP, PP int
}

// NewGrid returns the grid of world ranks for the given sizes; 0 means "the rest" for dp and
// 1 for tp and pp. It fails unless world = dp·tp·pp with every size positive.
func NewGrid(world, dp, tp, pp int) (Grid, error) {
	if world <= 0 {
		return Grid{}, fmt.Errorf("dist: world size %d must be positive", world)
	}
	if dp < 0 || tp < 0 || pp < 0 {
		return Grid{}, fmt.Errorf("dist: --dp %d --tp %d --pp %d must not be negative", dp, tp, pp)
	}
	tp, pp = max(tp, 1), max(pp, 1)
	if dp == 0 {
		if world%(tp*pp) != 0 {
			return Grid{}, fmt.Errorf("dist: world size %d is not a multiple of --tp %d x --pp %d", world, tp, pp)
		}
		dp = world / (tp * pp)
	}
	if dp*tp*pp != world {
		return Grid{}, fmt.Errorf("dist: --dp %d x --tp %d x --pp %d = %d ranks, but the world has %d", dp, tp, pp, dp*tp*pp, world)
	}
	return Grid{DP: dp, TP: tp, PP: pp}, nil
}

// World is the number of ranks.
func (g Grid) World() int { return g.DP * g.TP * g.PP }

// Rank is the world rank at c.
func (g Grid) Rank(c Coord) int { return c.PP*g.DP*g.TP + c.DP*g.TP + c.TP }

// Coord is rank's place.
func (g Grid) Coord(rank int) Coord {
	return Coord{TP: rank % g.TP, DP: rank / g.TP % g.DP, PP: rank / (g.TP * g.DP)}
}

// TPGroups are the tensor-parallel groups (world ranks, by TP rank), one per (pp, dp), in
// order of pp then dp.
func (g Grid) TPGroups() [][]int {
	var out [][]int
	for p := range g.PP {
		for d := range g.DP {
			var r []int
			for t := range g.TP {
				r = append(r, g.Rank(Coord{DP: d, TP: t, PP: p}))
			}
			out = append(out, r)
		}
	}
	return out
}

// DPGroups are the data-parallel groups (by DP rank), one per (pp, tp).
func (g Grid) DPGroups() [][]int {
	var out [][]int
	for p := range g.PP {
		for t := range g.TP {
			var r []int
			for d := range g.DP {
				r = append(r, g.Rank(Coord{DP: d, TP: t, PP: p}))
			}
			out = append(out, r)
		}
	}
	return out
}

// PPGroups are the pipelines (by stage), one per (dp, tp).
func (g Grid) PPGroups() [][]int {
	var out [][]int
	for d := range g.DP {
		for t := range g.TP {
			var r []int
			for p := range g.PP {
				r = append(r, g.Rank(Coord{DP: d, TP: t, PP: p}))
			}
			out = append(out, r)
		}
	}
	return out
}

// EmbeddingGroups pair the first and the last stage of each pipeline (Megatron's embedding
// group: they allreduce the gradient of a tied token_embd); nil when PP = 1.
func (g Grid) EmbeddingGroups() [][]int {
	if g.PP == 1 {
		return nil
	}
	var out [][]int
	for _, p := range g.PPGroups() {
		out = append(out, []int{p[0], p[len(p)-1]})
	}
	return out
}

func (g Grid) String() string { return fmt.Sprintf("dp%d x pp%d x tp%d", g.DP, g.PP, g.TP) }
