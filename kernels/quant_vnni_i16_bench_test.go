package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkQ4PrefillZ: Q4_0 prefill on AVX-512 VNNI on the shapes of stories110M and
// TinyLlama, GOP/s (2·m·n·k), with 1 thread also per second of the thread's CPU time. Modes,
// alternated over three rounds: pairs = the VNNI pair tiles on the stored rows
// (q4_0TileZ4x4), i16 = the 16-row tiles on the weight's pack (PrepackQ8; the default).
func BenchmarkQ4PrefillZ(b *testing.B) {
	if !quantVNNI || tilesI16[1] == nil {
		b.Skip("no AVX-512 VNNI")
	}
	shapes := [][2]int{{768, 768}, {2048, 768}, {768, 2048}, {2048, 2048}, {5632, 2048}, {2048, 5632}}
	for _, m := range []int{64, 512} {
		for _, sh := range shapes {
			n, k := sh[0], sh[1]
			w := randQuantFast(b, tensor.Q4_0, n, k)
			x := qRandVec(rand.New(rand.NewPCG(2, 3)), m*k, 1)
			out := make([]float32, m*n)
			for _, th := range []int{1, 2} {
				p := NewPool(th)
				for round := 0; round < 3; round++ {
					for _, mode := range []string{"pairs", "i16"} {
						name := fmt.Sprintf("%dx%d/m%d/t%d/%s/r%d", n, k, m, th, mode, round)
						b.Run(name, func(b *testing.B) { benchPrefillZ(b, p, out, x, w, m, th, mode) })
					}
				}
			}
		}
	}
}

func benchPrefillZ(b *testing.B, p *Pool, out, x []float32, w *tensor.Tensor, m, th int, mode string) {
	if mode == "i16" {
		PrepackQ8(w)
		defer DropPackQ8(w)
		if err := p.MatMul(out, x, w, m); err != nil { // the pack, made once
			b.Fatal(err)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	for b.Loop() {
		if err := p.MatMul(out, x, w, m); err != nil {
			b.Fatal(err)
		}
	}
	n, k := w.Shape[0], w.Shape[1]
	ops := 2 * float64(m*n*k) * float64(b.N)
	b.ReportMetric(ops/b.Elapsed().Seconds()/1e9, "GOP/s")
	if th == 1 {
		b.ReportMetric(ops/(threadCPU()-cpu0)/1e9, "GOP/thread-s")
	}
}

// BenchmarkI16Pack: repacking a TinyLlama-shaped 5632x2048 Q4_0 weight into 16-row groups
// (the one-time cost per weight), MB/s of stored rows.
func BenchmarkI16Pack(b *testing.B) {
	w := randQuantFast(b, tensor.Q4_0, 5632, 2048)
	for b.Loop() {
		newI16Pack(Serial, w.Data, 5632, 2048)
	}
	b.SetBytes(int64(len(w.Data)))
}
