// This file is the pass framework: a Pass is a function from graph to graph that reports what
// it did; Run applies a pipeline of them, verifying after each, and keeps each stage's result
// so `llmcloud compile --dump passes` can show the graph before and after every pass.
package graph

import (
	"fmt"
	"sort"
	"strings"
)

// Pass rewrites a graph. Run must not modify its argument's nodes in place when it changes
// them (passes may share unchanged Values and Nodes with their input).
type Pass struct {
	Name string
	Doc  string
	Run  func(g *Graph) (*Graph, Stats, error)
}

// Stats are what a pass did, by name (e.g. "fused swiglu": 22, "removed": 3).
type Stats map[string]int64

func (s Stats) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, s[k])
	}
	return strings.Join(parts, ", ")
}

// Stage is one pass's outcome.
type Stage struct {
	Pass        string
	Before      *Graph
	After       *Graph
	Stats       Stats
	NodesBefore int
	NodesAfter  int
}

// RunPasses applies passes in order, verifying each result; it returns the final graph and
// every stage.
func RunPasses(g *Graph, passes ...Pass) (*Graph, []Stage, error) {
	if err := Verify(g); err != nil {
		return nil, nil, err
	}
	var stages []Stage
	for _, p := range passes {
		out, st, err := p.Run(g)
		if err != nil {
			return nil, stages, fmt.Errorf("graph: pass %s: %w", p.Name, err)
		}
		if err := Verify(out); err != nil {
			return nil, stages, fmt.Errorf("graph: pass %s produced an invalid graph: %w", p.Name, err)
		}
		stages = append(stages, Stage{Pass: p.Name, Before: g, After: out, Stats: st,
			NodesBefore: len(g.Nodes), NodesAfter: len(out.Nodes)})
		g = out
	}
	return g, stages, nil
}
