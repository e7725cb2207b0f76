// This file compares the training step through the graph executor with the hand-written
// layers in one run, alternating steps so that a shared machine's load hits both alike: the
// default recipe's shape (recipes/default: dim 256, 4 layers, 8 heads / 4 KV heads, B=8,
// T=512, one thread) and GPT-2 124M's (B=4, T=64, every thread). It reports each path's
// tokens per CPU second and per wall second and their ratio. Run:
// go test ./train/nn -run X -bench GraphVsHand -benchtime 6x
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

func BenchmarkGraphVsHandDefault(b *testing.B) {
	benchGraphVsHand(b, defaultRecipe, 8, 512, kernels.NewPool(1))
}

func BenchmarkGraphVsHandGPT2(b *testing.B) { benchGraphVsHand(b, gpt2Like, 4, 64, kernels.Default) }

func benchGraphVsHand(b *testing.B, cfg model.Config, B, T int, pool *kernels.Pool) {
	var ms [2]*Model
	for i, opt := range []Options{{}, {handWritten: true}} {
		m, err := NewWith(cfg, B, T, pool, opt)
		if err != nil {
			b.Fatal(err)
		}
		m.Init(1)
		ms[i] = m
	}
	if ms[0].prog == nil || ms[1].prog != nil {
		b.Fatal("the models do not take the two paths")
	}
	r := rand.New(rand.NewPCG(1, 2))
	tokens, targets := randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)
	var cpu, wall [2]float64
	step := func(i int) {
		c0, t0 := cpuSeconds(), time.Now()
		ms[i].ZeroGrad()
		ms[i].Forward(tokens, targets, B, T)
		ms[i].Backward()
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
	b.ReportMetric(tok/cpu[0], "graph-tok/cpu-s")
	b.ReportMetric(tok/cpu[1], "hand-tok/cpu-s")
	b.ReportMetric(cpu[1]/cpu[0], "graph/hand-cpu")
	b.ReportMetric(wall[1]/wall[0], "graph/hand-wall")
}

// BenchmarkGraphVsHandRecomputeGPT2 is GraphVsHandGPT2 with Options.Recompute.
func BenchmarkGraphVsHandRecomputeGPT2(b *testing.B) {
	benchPipelineVsHand(b, gpt2Like, []int{0, 12}, "seq", 1, 4, 64, kernels.Default, true)
}

// BenchmarkGraphVsHandStages is the default recipe's shape as two pipeline stages driven in
// one process, 1F1B over 4 micro-batches of 2 x 256 (2 slots on the first stage), one thread.
func BenchmarkGraphVsHandStages(b *testing.B) {
	benchPipelineVsHand(b, defaultRecipe, []int{0, 2, 4}, "1f1b", 4, 2, 256, kernels.NewPool(1), false)
}

// BenchmarkGraphVsHandStagesRecompute is BenchmarkGraphVsHandStages with Options.Recompute.
func BenchmarkGraphVsHandStagesRecompute(b *testing.B) {
	benchPipelineVsHand(b, defaultRecipe, []int{0, 2, 4}, "1f1b", 4, 2, 256, kernels.NewPool(1), true)
}

// benchPipelineVsHand alternates steps of the stages of split (schedule kind over M
// micro-batches of B x T) through the graph and through the hand-written layers, and reports
// the ratio and each path's activation memory (every stage and slot).
func benchPipelineVsHand(b *testing.B, cfg model.Config, split []int, kind string, M, B, T int, pool *kernels.Pool, recompute bool) {
	S := len(split) - 1
	var stages [2][]*Model
	var acts [2]int64
	ops := make([][]stageOp, S)
	for i, hand := range []bool{false, true} {
		for s := range S {
			var slots int
			ops[s], slots = scheduleOps(kind, s, S, M)
			m, err := NewWith(cfg, B, T, pool, Options{FirstBlock: split[s], EndBlock: split[s+1], Slots: slots, Recompute: recompute, handWritten: hand})
			if err != nil {
				b.Fatal(err)
			}
			m.Init(1)
			stages[i] = append(stages[i], m)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	var batches [][2][]int32
	for range M {
		batches = append(batches, [2][]int32{randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)})
	}
	var cpu, wall [2]float64
	step := func(i int) {
		c0, t0 := cpuSeconds(), time.Now()
		for _, m := range stages[i] {
			m.ZeroGrad()
		}
		drivePipeline(b, stages[i], ops, kind, split, batches, B, T, 1.0/float32(M))
		cpu[i] += cpuSeconds() - c0
		wall[i] += time.Since(t0).Seconds()
	}
	step(0) // warm up (and allocate the hand-written activations)
	step(1)
	for _, m := range stages[0] {
		for _, p := range m.progs {
			acts[0] += p.ActivationBytes()
		}
		acts[0] += m.progs[0].SharedBytes()
	}
	for _, m := range stages[1] {
		for _, s := range m.slots {
			acts[1] += int64(len(s.acts.buf)) * 4
		}
	}
	cpu, wall = [2]float64{}, [2]float64{}
	for b.Loop() {
		step(0)
		step(1)
	}
	tok := float64(M * B * T * b.N)
	b.ReportMetric(tok/cpu[0], "graph-tok/cpu-s")
	b.ReportMetric(tok/cpu[1], "hand-tok/cpu-s")
	b.ReportMetric(cpu[1]/cpu[0], "graph/hand-cpu")
	b.ReportMetric(wall[1]/wall[0], "graph/hand-wall")
	b.ReportMetric(float64(acts[0])/(1<<20), "graph-actMiB")
	b.ReportMetric(float64(acts[1])/(1<<20), "hand-actMiB")
}
