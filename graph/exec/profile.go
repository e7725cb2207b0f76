// This file is the executor's profiling: with a profile.Recorder attached, Run times every
// node as a slice (category "op", named by its op, with the bytes and FLOPs of graph.NodeCost
// for this batch) on the calling goroutine's track, and the pool reports every worker's part
// of the node's parallel loops as slices (category "worker") on that worker's track. Without
// one, Run checks a nil pointer once per call.
package exec

import (
	"fmt"
	"time"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/profile"
)

// ProfileProcess is the process of the executor's tracks in a profile.
const ProfileProcess = "compute"

// WorkerTrack is the name of worker w's track (worker 0: the goroutine that calls Run).
func WorkerTrack(w int) string {
	if w == 0 {
		return "worker 0 (caller)"
	}
	return fmt.Sprintf("worker %d", w)
}

// programProfile is the profiling state of a Program with a recorder.
type programProfile struct {
	rec    *profile.Recorder
	tracks []*profile.Track // per pool worker
	op     string           // the node running (read by the workers inside its parallel loops)
	ctx    []int
	// costs of the nodes for the batch shape key (attention's, which depend on the rows'
	// positions, are recomputed every run).
	key   [2]int
	costs []graph.Cost
	names []string
}

// SetRecorder attaches rec to p (nil: profiling off).
func (p *Program) SetRecorder(rec *profile.Recorder) {
	if rec == nil {
		p.prof = nil
		return
	}
	if p.prof == nil || p.prof.rec != rec {
		p.prof = &programProfile{rec: rec, key: [2]int{-1, -1}}
		for _, n := range p.nodes {
			p.prof.names = append(p.prof.names, n.Name())
		}
	}
}

// PoolPart records a worker's part of the running node.
func (pr *programProfile) PoolPart(w int, start, end time.Time) {
	if w < len(pr.tracks) {
		pr.tracks[w].Span(pr.op, "worker", start, end, nil)
	}
}

// nodeCosts returns the nodes' costs for this batch.
func (p *Program) nodeCosts(st *Step) []graph.Cost {
	pr := p.prof
	pr.ctx = pr.ctx[:0]
	for _, r := range st.Rows {
		pr.ctx = append(pr.ctx, r.Pos+1)
	}
	env := graph.CostEnv{Sym: p.env, Context: pr.ctx}
	key := [2]int{len(st.Tokens), len(st.LogitRows)}
	fresh := key != pr.key
	pr.key = key
	if len(pr.costs) != len(p.nodes) {
		pr.costs, fresh = make([]graph.Cost, len(p.nodes)), true
	}
	for i, n := range p.nodes {
		if fresh || n.Op == "attention" {
			pr.costs[i], _ = graph.NodeCost(n, env) // an op without a rule shows no rates
		}
	}
	return pr.costs
}

// runProfiled is Run's node loop with every node timed.
func (p *Program) runProfiled(st *Step) error {
	pr := p.prof
	for w := len(pr.tracks); w < p.pool.Workers(); w++ {
		pr.tracks = append(pr.tracks, pr.rec.Track(ProfileProcess, WorkerTrack(w)))
	}
	costs := p.nodeCosts(st)
	p.pool.SetTracer(pr)
	defer p.pool.SetTracer(nil)
	t0 := pr.rec.Start()
	caller := pr.tracks[0]
	for i, in := range p.code {
		n := p.nodes[i]
		pr.op = n.Op
		start := time.Now()
		err := in.run(p)
		end := time.Now()
		caller.Add(profile.Slice{Start: start.Sub(t0), Dur: end.Sub(start), Name: n.Op, Cat: "op",
			Bytes: costs[i].Bytes, FLOPs: costs[i].FLOPs, Node: pr.names[i]})
		if err != nil {
			return fmt.Errorf("exec: node %s (%s): %w", n.Name(), n.Op, err)
		}
	}
	return nil
}
