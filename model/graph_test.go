package model

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
)

// The builder covers every architecture's options, and its graphs verify and round-trip
// through the text form.
func TestBuildGraphArchitectures(t *testing.T) {
	base := Config{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128,
		Vocab: 100, CtxLen: 128, RopeTheta: 10000, NormEps: 1e-5}
	cases := []struct {
		name   string
		edit   func(c *Config)
		counts map[string]int
	}{
		{"llama", func(c *Config) {}, map[string]int{"matmul": 15, "rms_norm": 5, "rope": 4, "attention": 2, "add": 4}},
		{"llama3-tied", func(c *Config) {
			c.Tied = true
			c.RopeScaling = &RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 64}
		}, map[string]int{"matmul": 15}},
		{"qwen2", func(c *Config) { c.Arch = "qwen2"; c.QKVBias = true; c.RopeNeoX = true }, map[string]int{"add": 10}},
		{"qwen3", func(c *Config) { c.Arch = "qwen3"; c.QKNorm = true; c.RopeNeoX = true; c.HeadDim = 32 }, map[string]int{"rms_norm": 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.edit(&cfg)
			g, err := BuildGraph(&cfg, nil, cfg.RopeScaling != nil)
			if err != nil {
				t.Fatal(err)
			}
			counts := g.OpCounts()
			for op, want := range c.counts {
				if counts[op] != want {
					t.Errorf("%s: %d nodes, want %d (%v)", op, counts[op], want, counts)
				}
			}
			if len(g.Weights) != len(cfg.Shapes())+btoi(cfg.RopeScaling != nil) {
				t.Errorf("%d weights, config has %d tensors", len(g.Weights), len(cfg.Shapes()))
			}
			for name, shape := range cfg.Shapes() {
				v := g.Value(name)
				if v == nil || v.Type.Shape.String() != graph.Dims(shape...).String() {
					t.Errorf("weight %s: %v, want shape %v", name, v, shape)
				}
			}
			text := graph.String(g)
			g2, err := graph.Parse(text)
			if err != nil || graph.String(g2) != text {
				t.Fatalf("round trip: %v", err)
			}
			if !strings.Contains(text, "%logits: f32[s,100] = matmul(") {
				t.Errorf("no logits node:\n%s", text)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
