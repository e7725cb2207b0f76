// The executor's add_rms_norm against the unfused add then rms_norm: a stand-in for the
// add+rms_norm pass (graph/fuse_addnorm.go, written elsewhere) rewrites the model graph here,
// and the results must stay bit-identical.
package exec_test

import (
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// fuseAddNormForTest turns every add whose result feeds an rms_norm into add_rms_norm.
func fuseAddNormForTest(in *graph.Graph) (*graph.Graph, graph.Stats, error) {
	g := in.Clone()
	norms := map[*graph.Value]*graph.Node{}
	for _, n := range g.Nodes {
		if n.Op == "rms_norm" && n.Args[0].Kind == graph.KindResult && n.Args[0].Def.Op == "add" {
			norms[n.Args[0]] = n
		}
	}
	dead := map[*graph.Node]bool{}
	st := graph.Stats{}
	for _, n := range g.Nodes {
		nn := norms[n.Outs[0]]
		if n.Op != "add" || nn == nil || !n.Args[0].Type.Equal(n.Args[1].Type) {
			continue
		}
		n.Op, n.Attrs = "add_rms_norm", nn.Attrs
		n.Args = append(n.Args, nn.Args[1])
		o := nn.Outs[0]
		o.Def, o.Index = n, 1
		n.Outs = append(n.Outs, o)
		dead[nn] = true
		st["fused"]++
	}
	var nodes []*graph.Node
	for _, n := range g.Nodes {
		if !dead[n] {
			nodes = append(nodes, n)
		}
	}
	g.Nodes = nodes
	return g, st, nil
}

func TestAddRMSNormMatchesForwardBatch(t *testing.T) {
	pass := graph.Pass{Name: "addnorm_for_test", Run: fuseAddNormForTest}
	for _, name := range []string{"qwen3", "tied"} {
		cfg := archConfigs()[name]
		m := randModel(t, cfg, tensor.Q4_0, 13)
		t.Run(name, func(t *testing.T) {
			p := compile(t, m, false, append(graph.ServingPasses(), pass))
			if c := p.Graph().OpCounts()["add_rms_norm"]; c != 2*cfg.Layers-1 {
				t.Fatalf("%d add_rms_norm nodes, want %d", c, 2*cfg.Layers-1)
			}
			raggedRun(t, newPair(t, m, p, randPrompts(cfg.Vocab, []int{2, 5, 23, 40}, 8), false, 9))
		})
	}
}
