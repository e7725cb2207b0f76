package nn_test

import (
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/nn"
)

// qloraBenchCfg is two blocks of stories110M's shape (dim 768, ffn 2048).
var qloraBenchCfg = model.Config{Arch: "llama", Dim: 768, Layers: 2, Heads: 12, KVHeads: 12, HeadDim: 64,
	FFN: 2048, Vocab: 4096, CtxLen: 256, RopeTheta: 10000, NormEps: 1e-5}

// BenchmarkQLoRAStep is one LoRA training step (Forward with targets + Backward, r 8, all
// seven targets) on a base held in F32, or kept in Q8_0 or Q4_K (QLoRA-style). baseMiB is the
// memory of the base's matrices as the step reads them. Run (alternating the three):
// go test -c -o nn.test ./train/nn; for i in 1 2 3; do for t in F32 Q8_0 Q4_K; do
// ./nn.test -test.run X -test.bench "QLoRAStep/$t\$" -test.benchtime 3x; done; done
// cpu-ms/op is the process's CPU time per step, less sensitive than ns/op to a shared machine.
func BenchmarkQLoRAStep(b *testing.B) {
	const B, T = 4, 128
	for _, dt := range []tensor.DType{tensor.F32, tensor.Q8_0, tensor.Q4_K} {
		b.Run(dt.String(), func(b *testing.B) {
			q, deq, norms := quantBase(b, qloraBenchCfg, dt)
			a := &nn.Adapter{Targets: nn.AdapterTargets, Rank: 8, Alpha: 16, Base: norms, Quant: q}
			bytes := 0
			for _, t := range q {
				bytes += len(t.Data)
			}
			if dt == tensor.F32 {
				a.Base, a.Quant = deq, nil
			}
			m, err := nn.NewWith(qloraBenchCfg, B, T, kernels.Default, nn.Options{Adapter: a})
			if err != nil {
				b.Fatal(err)
			}
			m.Init(1)
			r := rand.New(rand.NewPCG(1, 2))
			x, y := make([]int32, B*T), make([]int32, B*T)
			for i := range x {
				x[i], y[i] = int32(r.IntN(qloraBenchCfg.Vocab)), int32(r.IntN(qloraBenchCfg.Vocab))
			}
			m.Forward(x, y, B, T) // warm up
			m.Backward()
			cpu0 := cpuTime()
			for b.Loop() {
				m.ZeroGrad()
				m.Forward(x, y, B, T)
				m.Backward()
			}
			b.ReportMetric(float64(bytes)/(1<<20), "baseMiB")
			b.ReportMetric((cpuTime()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the user+system CPU time of the process so far, in seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
