// This file implements tensor parallelism's ops (graph/ops_comm.go) for a group of one rank:
// the collectives return their argument, and the vocab-parallel embedding and loss see only
// this rank's block [lo, lo+V) of the vocabulary (a target outside it adds no target logit,
// as the rank holding it would). Several ranks' graphs are compared through the executors.
package ref

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
)

func init() {
	ident := func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		y := zerosF(t[0].Shape)
		copy(y.F, t[0].F)
		return []*Tensor{y}, nil
	}
	opFuncs["tp_copy"] = ident
	opFuncs["all_reduce_sum"] = ident
	opFuncs["all_gather_last"] = func(c *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		if n := a.Int("size", 0); n != 1 {
			return nil, fmt.Errorf("all_gather_last of %d ranks in a group of one", n)
		}
		return ident(c, t, a)
	}
	opFuncs["embedding_shard"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		tab, ids, lo := t[0], t[1], int(a.Int("lo", 0))
		V, D := tab.Shape[0], tab.Shape[1]
		y := zerosF(append(append([]int(nil), ids.Shape...), D))
		for i, id := range ids.I {
			if r := int(id) - lo; r >= 0 && r < V {
				copy(y.F[i*D:(i+1)*D], tab.F[r*D:])
			}
		}
		return []*Tensor{y}, nil
	}
	opFuncs["embedding_shard_grad"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		dy, ids, tab, lo := t[0], t[1], t[2], int(a.Int("lo", 0))
		V, D := tab.Shape[0], tab.Shape[1]
		d := zerosF(tab.Shape)
		for i, id := range ids.I {
			if r := int(id) - lo; r >= 0 && r < V {
				for j := 0; j < D; j++ {
					d.F[r*D+j] += dy.F[i*D+j]
				}
			}
		}
		return []*Tensor{d}, nil
	}
	opFuncs["cross_entropy_shard"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		z, tg, lo := t[0], t[1], int(a.Int("lo", 0))
		V := z.Shape[1]
		var sum float64
		for r, target := range tg.I {
			if target < 0 {
				return nil, fmt.Errorf("target %d at %d: negative", target, r)
			}
			row := z.F[r*V : (r+1)*V]
			sum += logSumExp(row)
			if c := int(target) - lo; c >= 0 && c < V {
				sum -= row[c]
			}
		}
		loss := zerosF(nil)
		if n := len(tg.I); n > 0 {
			loss.F[0] = sum / float64(n)
		}
		return []*Tensor{loss}, nil
	}
	opFuncs["cross_entropy_shard_grad"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		dl, z, tg, lo := t[0].F[0], t[1], t[2], int(a.Int("lo", 0))
		V := z.Shape[1]
		dz := zerosF(z.Shape)
		n := float64(len(tg.I))
		for r, target := range tg.I {
			row := dz.F[r*V : (r+1)*V]
			softmaxRow(row, z.F[r*V:(r+1)*V])
			if c := int(target) - lo; c >= 0 && c < V {
				row[c]--
			}
			for i := range row {
				row[i] *= dl / n
			}
		}
		return []*Tensor{dz}, nil
	}
}
