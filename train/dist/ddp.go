// This file implements the scalar reductions of a data-parallel step: the logged loss (the
// mean of the ranks' means) and the pieces of the global gradient norm (sums of squares). The
// gradients themselves are reduced in buckets (ddp_buckets.go) or by ZeRO (zero.go).
package dist

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/comm"
)

// SumGrads sums g ([n], the same layout on every rank) over group in one allreduce after the
// backward passes: naive DDP, without overlap (a nil group, one rank, is a no-op). Pipeline
// stages use it; the bucketed version (ddp_buckets.go) overlaps backward.
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
	if err := SumScalars(group, xs...); err != nil || group == nil {
		return err
	}
	for _, x := range xs {
		*x /= float64(group.Size())
	}
	return nil
}

// SumScalars replaces each of xs by its sum over group (a nil group: unchanged). The float64
// values are all-gathered and added in rank order, so every rank gets the same, full-precision
// sum.
func SumScalars(group *comm.Group, xs ...*float64) error {
	if group == nil {
		return nil
	}
	k := 8 * len(xs)
	src, dst := make([]byte, k), make([]byte, k*group.Size())
	for i, x := range xs {
		binary.LittleEndian.PutUint64(src[8*i:], math.Float64bits(*x))
	}
	if err := group.AllGather(dst, src); err != nil {
		return fmt.Errorf("dist: scalar all-gather: %w", err)
	}
	for i, x := range xs {
		*x = 0
		for r := range group.Size() {
			*x += math.Float64frombits(binary.LittleEndian.Uint64(dst[r*k+8*i:]))
		}
	}
	return nil
}
