// This file connects tensor parallelism to the graph path (graph.go): the executor shards the
// model's graph for this rank (graph.ShardTP) and runs its collectives over Options.TP, and a
// collective's failure, which the executor raises as a *trainexec.CommError panic, is raised
// again as the *CommError that CatchComm recovers.
package nn

import (
	"errors"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
)

// execOptions are the graph transformations of the model's options.
func (m *Model) execOptions() trainexec.Options {
	var o trainexec.Options
	if m.opt.TP != nil && m.opt.TP.Size() > 1 {
		o.TP = m.opt.TP
	}
	return o
}

// commPanic, deferred around the executor, turns its *trainexec.CommError panic into a
// *CommError one; other panics continue.
func commPanic() {
	r := recover()
	if r == nil {
		return
	}
	var ce *trainexec.CommError
	if e, ok := r.(error); ok && errors.As(e, &ce) {
		panic(&CommError{Op: ce.Op, Err: ce.Err})
	}
	panic(r)
}
