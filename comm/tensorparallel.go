// This file names the two reductions tensor parallelism uses, so a *Group is directly the
// tensor-parallel group of train/nn (nn.Comm: Rank, Size, AllReduceSum, AllReduceMax) without
// comm importing nn or the trainer writing an adapter.
package comm

// AllReduceSum is AllReduce(x, Sum): every rank ends with the element-wise sum of all ranks' x.
func (g *Group) AllReduceSum(x []float32) error { return g.AllReduce(x, Sum) }

// AllReduceMax is AllReduce(x, Max): every rank ends with the element-wise maximum.
func (g *Group) AllReduceMax(x []float32) error { return g.AllReduce(x, Max) }
