// The executor's add_rms_norm: the serving pipeline fuses every residual add with the norm
// after it (graph.FuseAddNorm); without that pass the same graph runs add then rms_norm, and
// both give ForwardBatch's bits.
package exec_test

import (
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

func TestAddRMSNorm(t *testing.T) {
	for _, name := range []string{"qwen3", "tied"} {
		cfg := archConfigs()[name]
		m := randModel(t, cfg, tensor.Q4_0, 13)
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				passes []graph.Pass
				fused  int
			}{{graph.ServingPipeline(), 2*cfg.Layers - 1}, {graph.ServingPasses(), 0}} {
				p := compile(t, m, false, tc.passes)
				if c := p.Graph().OpCounts()["add_rms_norm"]; c != tc.fused {
					t.Fatalf("%d add_rms_norm nodes, want %d", c, tc.fused)
				}
				raggedRun(t, newPair(t, m, p, randPrompts(cfg.Vocab, []int{2, 5, 23, 40}, 8), false, 9))
			}
		})
	}
}
