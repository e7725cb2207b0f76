// This file implements the ranks' agreement on stopping: a signal (SIGINT, SIGTERM from a
// launcher, Kubernetes or Slurm) reaches the ranks of a distributed run at slightly different
// times, but they must stop after the same step, or the ones that go on wait in a collective
// for the ones that stopped. Before each step every rank contributes whether its context is
// done to a max-allreduce of one float over the world; all stop when any wants to.
package train

import (
	"context"
	"fmt"

	"github.com/llmcloud/llmcloud/comm"
)

// stopAgreed reports whether the run stops before its next step, and the reason to return
// (ctx.Err() of the rank whose context is done; context.Canceled on ranks that learn it from
// another). Every rank of a distributed run calls it once per step.
func (t *Trainer) stopAgreed(ctx context.Context) (bool, error) {
	local := ctx.Err()
	if t.par.mesh == nil || t.par.mesh.World == nil || t.par.mesh.World.Size() == 1 {
		return local != nil, local
	}
	flag := []float32{0}
	if local != nil {
		flag[0] = 1
	}
	if err := t.par.mesh.World.AllReduce(flag, comm.Max); err != nil {
		return true, fmt.Errorf("train: agreeing on a stop before step %d: %w", t.step+1, err)
	}
	if flag[0] == 0 {
		return false, nil
	}
	if local == nil {
		local = context.Canceled
	}
	return true, local
}
