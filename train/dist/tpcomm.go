// This file implements TPComm: a *comm.Group as the tensor-parallel group train/nn computes
// with (nn.Comm), so nn never imports comm.
package dist

import (
	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/train/nn"
)

type tpComm struct{ g *comm.Group }

// TPComm adapts g to nn.Comm (nil for a nil group: no tensor parallelism).
func TPComm(g *comm.Group) nn.Comm {
	if g == nil {
		return nil
	}
	return tpComm{g}
}

func (c tpComm) Rank() int                      { return c.g.Rank() }
func (c tpComm) Size() int                      { return c.g.Size() }
func (c tpComm) AllReduceSum(x []float32) error { return c.g.AllReduce(x, comm.Sum) }
func (c tpComm) AllReduceMax(x []float32) error { return c.g.AllReduce(x, comm.Max) }
