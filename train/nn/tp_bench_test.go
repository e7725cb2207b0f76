// This file benchmarks a tensor-parallel training step through the graph (graph.ShardTP run
// by trainexec): the default recipe's shape at B=4, T=256 on TP=2 ranks (goroutines over
// memGroup, one thread each). It reports tokens per wall second and per CPU second. Run:
// go test ./train/nn -run X -bench StepTP -benchtime 6x
package nn

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
)

func BenchmarkStepTP(b *testing.B) {
	const B, T, TP = 4, 256, 2
	cfg := defaultRecipe
	var ranks []*Model
	g := newMemGroup(TP)
	for r := 0; r < TP; r++ {
		m, err := NewWith(cfg, B, T, kernels.NewPool(1), Options{TP: memRank{g, r}})
		if err != nil {
			b.Fatal(err)
		}
		m.Init(1)
		ranks = append(ranks, m)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tokens, targets := randTokens(rng, B*T, cfg.Vocab), randTokens(rng, B*T, cfg.Vocab)
	step := func() {
		onAll(ranks, func(_ int, m *Model) {
			m.ZeroGrad()
			m.Forward(tokens, targets, B, T)
			m.Backward()
		})
	}
	step() // warm up
	c0, t0 := cpuSeconds(), time.Now()
	for b.Loop() {
		step()
	}
	tok := float64(B * T * b.N)
	b.ReportMetric(tok/time.Since(t0).Seconds(), "tok/s")
	b.ReportMetric(tok/(cpuSeconds()-c0), "tok/cpu-s")
}
