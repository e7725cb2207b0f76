// This file implements Links: one rank's point-to-point connections to the neighbouring
// stages of its pipeline. comm runs one group's operations in call order on one worker, so a
// receive posted early would hold up a send behind it on the same group; each neighbour pair
// therefore gets two 2-rank groups, one per direction (activations flow down one, gradients up
// the other), and on each group one side only sends and the other only receives, in
// micro-batch order. Sends and receives are then never ordered against each other and the
// schedules' dependencies alone decide progress (pipeline_sim.go shows they cannot deadlock).
package dist

import (
	"fmt"
	"slices"

	"github.com/llmcloud/llmcloud/comm"
)

// Links are this rank's groups with its pipeline neighbours; a field is nil when there is no
// such neighbour (the first stage has no previous, the last no next).
type Links struct {
	ActPrev  *comm.Group // receives activations from the previous stage
	GradPrev *comm.Group // sends input gradients to the previous stage
	ActNext  *comm.Group // sends activations to the next stage
	GradNext *comm.Group // receives output gradients from the next stage
}

// NewLinks makes the links of every pipeline in pipelines (world ranks by stage, as
// Grid.PPGroups gives them; every rank passes the same list) and returns this rank's. Every
// rank of world calls it: comm's NewGroup is collective over the world.
func NewLinks(world *comm.Group, pipelines [][]int) (*Links, error) {
	if world == nil {
		return nil, fmt.Errorf("dist: pipeline links need a world group")
	}
	me := world.Rank()
	l := &Links{}
	for _, pipe := range pipelines {
		for s := 0; s+1 < len(pipe); s++ {
			pair := []int{pipe[s], pipe[s+1]}
			for _, dst := range []struct{ lower, upper **comm.Group }{
				{&l.ActNext, &l.ActPrev}, {&l.GradNext, &l.GradPrev},
			} {
				g, err := world.NewGroup(pair)
				if err != nil {
					l.Close()
					return nil, fmt.Errorf("dist: pipeline link %v: %w", pair, err)
				}
				switch {
				case g == nil:
				case me == pair[0]:
					*dst.lower = g
				case me == pair[1]:
					*dst.upper = g
				default:
					g.Close() // not expected: comm gives groups only to members
				}
			}
		}
		if slices.Contains(pipe, me) && len(pipe) > 1 && l.ActPrev == nil && l.ActNext == nil {
			l.Close()
			return nil, fmt.Errorf("dist: rank %d is in pipeline %v but got no link", me, pipe)
		}
	}
	return l, nil
}

// peer is the other rank of a 2-rank link group.
func peer(g *comm.Group) int { return 1 - g.Rank() }

// Close closes the link groups.
func (l *Links) Close() {
	for _, g := range []*comm.Group{l.ActPrev, l.GradPrev, l.ActNext, l.GradNext} {
		if g != nil {
			g.Close()
		}
	}
}
