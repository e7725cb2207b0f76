// This file implements naive data parallelism (DDP without buckets): after the step's
// backward passes the whole flat gradient is summed over the data-parallel group in one
// allreduce; the caller divides by DP in the optimizer's gradient scale, so every rank holds
// the gradient of the global batch's mean loss (Li et al., "PyTorch Distributed: Experiences
// on Accelerating Data Parallel Training", VLDB 2020, section 3).
package dist

import (
	"fmt"

	"github.com/llmcloud/llmcloud/comm"
)

// SumGrads sums g ([n], the same layout on every rank) over group; a nil group (one rank) is
// a no-op.
func SumGrads(group *comm.Group, g []float32) error {
	if group == nil {
		return nil
	}
	if err := group.AllReduce(g, comm.Sum); err != nil {
		return fmt.Errorf("dist: gradient allreduce: %w", err)
	}
	return nil
}

// MeanScalars replaces each of xs by its mean over group (a nil group: unchanged). Losses
// are reduced this way for logging: equal shares make the mean of the ranks' means the global
// mean.
func MeanScalars(group *comm.Group, xs ...*float64) error {
	if group == nil {
		return nil
	}
	buf := make([]float32, 2*len(xs))
	for i, x := range xs {
		// float32 pairs (hi, lo) carry a float64 through a float32 sum without losing digits
		// the logged loss needs.
		hi := float32(*x)
		buf[2*i], buf[2*i+1] = hi, float32(*x-float64(hi))
	}
	if err := group.AllReduce(buf, comm.Sum); err != nil {
		return fmt.Errorf("dist: loss allreduce: %w", err)
	}
	for i, x := range xs {
		*x = (float64(buf[2*i]) + float64(buf[2*i+1])) / float64(group.Size())
	}
	return nil
}
