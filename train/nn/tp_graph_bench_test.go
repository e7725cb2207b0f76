// This file compares a tensor-parallel training step through the graph (graph.ShardTP run by
// trainexec) with the hand-written tensor-parallel layers in one run, alternating steps: the
// default recipe's shape at B=4, T=256 on TP=2 ranks (goroutines over memGroup, one thread
// each). It reports each path's tokens per wall second and the ratios of CPU and wall time. Run:
// go test ./train/nn -run X -bench GraphVsHandTP -benchtime 6x
package nn

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
)

func BenchmarkGraphVsHandTP(b *testing.B) {
	const B, T, TP = 4, 256, 2
	cfg := defaultRecipe
	var paths [2][]*Model
	for i, hand := range []bool{false, true} {
		g := newMemGroup(TP)
		for r := 0; r < TP; r++ {
			m, err := NewWith(cfg, B, T, kernels.NewPool(1), Options{TP: memRank{g, r}, handWritten: hand})
			if err != nil {
				b.Fatal(err)
			}
			if (m.prog == nil) != hand {
				b.Fatal("the models do not take the two paths")
			}
			m.Init(1)
			paths[i] = append(paths[i], m)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tokens, targets := randTokens(rng, B*T, cfg.Vocab), randTokens(rng, B*T, cfg.Vocab)
	var cpu, wall [2]float64
	step := func(i int) {
		c0, t0 := cpuSeconds(), time.Now()
		onAll(paths[i], func(_ int, m *Model) {
			m.ZeroGrad()
			m.Forward(tokens, targets, B, T)
			m.Backward()
		})
		cpu[i] += cpuSeconds() - c0
		wall[i] += time.Since(t0).Seconds()
	}
	step(0) // warm up
	step(1)
	cpu, wall = [2]float64{}, [2]float64{}
	for b.Loop() {
		step(0)
		step(1)
	}
	tok := float64(B * T * b.N)
	b.ReportMetric(tok/wall[0], "graph-tok/s")
	b.ReportMetric(tok/wall[1], "hand-tok/s")
	b.ReportMetric(cpu[1]/cpu[0], "graph/hand-cpu")
	b.ReportMetric(wall[1]/wall[0], "graph/hand-wall")
}
