// This file benchmarks training through the graph on the default recipe's shape
// (recipes/default: dim 256, 4 layers, 8 heads / 4 KV heads, one thread): a whole-model step
// at B=8, T=512, and two pipeline stages driven in one process, 1F1B over 4 micro-batches of
// 2 x 256 (2 slots on the first stage), with and without Options.Recompute. Each reports
// tokens per CPU second and per wall second and the activation memory of every stage and slot
// (actMiB). GPT-2 124M's shape is step_bench_test.go's. Run:
// go test ./train/nn -run X -bench 'StepDefault|Stages' -benchtime 6x
package nn

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

var defaultRecipe = model.Config{Arch: "llama", Dim: 256, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 32,
	FFN: 640, Vocab: 4096, CtxLen: 512, RopeTheta: 10000, NormEps: 1e-5, Tied: true}

// BenchmarkStepDefault is one training step of the default recipe at B=8, T=512.
func BenchmarkStepDefault(b *testing.B) {
	benchPipeline(b, defaultRecipe, []int{0, 4}, "seq", 1, 8, 512, kernels.NewPool(1), false)
}

// BenchmarkStages is the default recipe as two 1F1B pipeline stages.
func BenchmarkStages(b *testing.B) {
	benchPipeline(b, defaultRecipe, []int{0, 2, 4}, "1f1b", 4, 2, 256, kernels.NewPool(1), false)
}

// BenchmarkStagesRecompute is BenchmarkStages with Options.Recompute.
func BenchmarkStagesRecompute(b *testing.B) {
	benchPipeline(b, defaultRecipe, []int{0, 2, 4}, "1f1b", 4, 2, 256, kernels.NewPool(1), true)
}

// benchPipeline runs steps of the stages of split (schedule kind over M micro-batches of
// B x T) and reports tokens per CPU and wall second and the activation memory.
func benchPipeline(b *testing.B, cfg model.Config, split []int, kind string, M, B, T int, pool *kernels.Pool, recompute bool) {
	S := len(split) - 1
	var stages []*Model
	var acts int64
	ops := make([][]stageOp, S)
	for s := range S {
		var slots int
		ops[s], slots = scheduleOps(kind, s, S, M)
		m, err := NewWith(cfg, B, T, pool, Options{FirstBlock: split[s], EndBlock: split[s+1], Slots: slots, Recompute: recompute})
		if err != nil {
			b.Fatal(err)
		}
		m.Init(1)
		stages = append(stages, m)
		for _, p := range m.progs {
			acts += p.ActivationBytes()
		}
		acts += m.progs[0].SharedBytes()
	}
	r := rand.New(rand.NewPCG(1, 2))
	var batches [][2][]int32
	for range M {
		batches = append(batches, [2][]int32{randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)})
	}
	step := func() {
		for _, m := range stages {
			m.ZeroGrad()
		}
		drivePipeline(b, stages, ops, kind, split, batches, B, T, 1.0/float32(M))
	}
	step() // warm up
	c0, t0 := cpuSeconds(), time.Now()
	for b.Loop() {
		step()
	}
	cpu, wall := cpuSeconds()-c0, time.Since(t0).Seconds()
	tok := float64(M * B * T * b.N)
	b.ReportMetric(tok/cpu, "tok/cpu-s")
	b.ReportMetric(tok/wall, "tok/s")
	b.ReportMetric(float64(acts)/(1<<20), "actMiB")
}
