// This file benchmarks one training step of the default model's recipe (recipes/default:
// dim 256, 4 layers, 8 heads, 4 kv heads, ffn 640, vocab 4096, tied; B=8, T=512, one thread)
// in fp32 and in bf16 (the pool in bf16 mode, weights read from bf16 copies), wall and CPU
// time per step (the CPU time does not count waiting for a shared core). Run both alternately: go test ./train/nn -run X -bench StepPrecision -benchtime 3x -count 3
package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

var defaultRecipeBF = model.Config{Arch: "llama", Dim: 256, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 32,
	FFN: 640, Vocab: 4096, CtxLen: 512, RopeTheta: 10000, NormEps: 1e-5, Tied: true}

func BenchmarkStepPrecision(b *testing.B) {
	for _, prec := range []string{"fp32", "bf16"} {
		b.Run(prec, func(b *testing.B) {
			const B, T = 8, 512
			pool := kernels.NewPool(1)
			m, err := New(defaultRecipeBF, B, T, pool)
			if err != nil {
				b.Fatal(err)
			}
			m.Init(1)
			if prec == "bf16" {
				var ws [][]float32
				for _, p := range m.Params() {
					if len(p.Shape) >= 2 {
						ws = append(ws, p.W)
					}
				}
				pool.SetBF16(kernels.NewBF16Weights(pool, ws...))
			}
			r := rand.New(rand.NewPCG(1, 2))
			tokens, targets := randTokens(r, B*T, defaultRecipeBF.Vocab), randTokens(r, B*T, defaultRecipeBF.Vocab)
			cpu0 := cpuSeconds()
			for b.Loop() {
				m.ZeroGrad()
				m.Forward(tokens, targets, B, T)
				m.Backward()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
			b.ReportMetric(1000*(cpuSeconds()-cpu0)/float64(b.N), "cpu-ms/step")
		})
	}
}
