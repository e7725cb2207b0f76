// This file implements Mesh: the process groups of one rank's place in the grid, made from
// the world group with comm's NewGroup (every rank makes every group in the same order; it
// joins the ones that hold it). Groups of one rank are nil: callers skip communication there.
package dist

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/prometheus/client_golang/prometheus"
)

// Mesh is this rank's grid coordinates and groups.
type Mesh struct {
	Grid  Grid
	Rank  int   // world rank
	Coord Coord // this rank's place
	World *comm.Group
	DP    *comm.Group // this rank's data-parallel group (nil when DP = 1)
	TP    *comm.Group // tensor-parallel group (nil when TP = 1)
	PP    *comm.Group // pipeline group (nil when PP = 1)
	// Embd is the first and last stage of this rank's pipeline (nil unless PP > 1 and this
	// rank is one of them): the group that sums a tied embedding's gradient.
	Embd *comm.Group
}

// NewMesh makes the groups of grid g over world (world.Size() must be g.World()). Every rank
// calls it with the same grid.
func NewMesh(world *comm.Group, g Grid) (*Mesh, error) {
	if world == nil {
		return nil, fmt.Errorf("dist: no world group")
	}
	if world.Size() != g.World() {
		return nil, fmt.Errorf("dist: grid %s needs %d ranks, the world has %d", g, g.World(), world.Size())
	}
	m := &Mesh{Grid: g, Rank: world.Rank(), Coord: g.Coord(world.Rank()), World: world}
	for _, s := range []struct {
		groups [][]int
		dst    **comm.Group
	}{{g.TPGroups(), &m.TP}, {g.DPGroups(), &m.DP}, {g.PPGroups(), &m.PP}, {g.EmbeddingGroups(), &m.Embd}} {
		if len(s.groups) == 0 || len(s.groups[0]) == 1 {
			continue
		}
		if len(s.groups) == 1 && len(s.groups[0]) == world.Size() {
			*s.dst = world // the group is the whole world: reuse its connections
			continue
		}
		for _, ranks := range s.groups {
			sub, err := world.NewGroup(ranks)
			if err != nil {
				return nil, fmt.Errorf("dist: group %v: %w", ranks, err)
			}
			if sub != nil && slices.Contains(ranks, m.Rank) {
				*s.dst = sub
			}
		}
	}
	return m, nil
}

// Close closes the sub-groups (not the world).
func (m *Mesh) Close() error {
	for _, g := range []*comm.Group{m.Embd, m.PP, m.DP, m.TP} {
		if g != nil && g != m.World {
			g.Close()
		}
	}
	return nil
}

// InitWorld joins the job the environment describes (torchrun's, Slurm's or a Kubernetes
// Indexed Job's variables; see comm.EnvFromOS) with every collective bounded by timeout.
func InitWorld(timeout time.Duration, log *slog.Logger, reg prometheus.Registerer) (*comm.Group, error) {
	env, err := comm.EnvFromOS()
	if err != nil {
		return nil, err
	}
	opts := comm.DefaultOptions()
	if timeout > 0 {
		opts.Timeout = timeout
	}
	return comm.Init(env, opts, log, reg)
}
