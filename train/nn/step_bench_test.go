// This file benchmarks one training step (Forward with targets + Backward) on GPT-2-124M-like
// llama shapes (dim 768, 12 layers, 12 heads, ffn 2048, vocab 50257; B=4, T=64 as llm.c's CPU
// default) and reports model GFLOP/s and MFU against kernels.PeakFLOPS of the pool's workers.
// Because the machine may be shared, it also reports the MFU over the process's CPU time
// (cpuMFU: model FLOPs / CPU seconds / one core's peak), which is what the step would reach
// with its cores to itself. BenchmarkStepRecompute is the same with Options.Recompute (HFU
// counts the recomputed forward; actMiB is the activation memory). Run:
// go test ./train/nn -run X -bench Step -benchtime 5x
package nn

import (
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// GPT2Like is GPT-2 124M's shape as a llama network (SwiGLU width 2048 keeps the MLP's
// parameter count of GPT-2's 4x768 GELU MLP).
var gpt2Like = model.Config{Arch: "llama", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, HeadDim: 64,
	FFN: 2048, Vocab: 50257, CtxLen: 1024, RopeTheta: 10000, NormEps: 1e-5, Tied: true}

func BenchmarkStep(b *testing.B) { benchStep(b, Options{}) }

// BenchmarkStepRecompute is the step with Options.Recompute: HFU counts the recomputed forward.
func BenchmarkStepRecompute(b *testing.B) { benchStep(b, Options{Recompute: true}) }

func benchStep(b *testing.B, opt Options) {
	const B, T = 4, 64
	m, err := NewWith(gpt2Like, B, T, kernels.Default, opt)
	if err != nil {
		b.Fatal(err)
	}
	m.Init(1)
	r := rand.New(rand.NewPCG(1, 2))
	tokens, targets := randTokens(r, B*T, gpt2Like.Vocab), randTokens(r, B*T, gpt2Like.Vocab)
	m.Forward(tokens, targets, B, T) // warm up
	m.Backward()
	cpu0 := cpuSeconds()
	for b.Loop() {
		m.ZeroGrad()
		m.Forward(tokens, targets, B, T)
		m.Backward()
	}
	cpu := cpuSeconds() - cpu0
	flops, hw := m.FLOPsPerToken(T)
	total := flops * B * T * float64(b.N)
	achieved := total / b.Elapsed().Seconds()
	peak := kernels.PeakFLOPS(kernels.Default.Workers())
	b.ReportMetric(achieved/1e9, "GFLOP/s")
	b.ReportMetric(100*achieved/peak, "%MFU")
	b.ReportMetric(100*achieved*hw/flops/peak, "%HFU")
	b.ReportMetric(100*total/cpu/kernels.PeakFLOPS(1), "%cpuMFU")
	b.ReportMetric(peak/1e9, "peakGFLOP/s")
	b.ReportMetric(float64(m.prog.ActivationBytes())/(1<<20), "actMiB")
}

// cpuSeconds is the user+system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
