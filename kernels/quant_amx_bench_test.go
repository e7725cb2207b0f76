package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkQuantPrefillAMX: Q8_0 and Q4_0 prefill on the TinyLlama shapes, GOP/s (2·m·n·k),
// with 1 thread also per second of the thread's CPU time. Modes, alternated over rounds:
// vnni = the AVX-512 VNNI paths (Q8_0: the pair tiles on the stored rows, Q4_0: the 16-row
// tiles on the pack), amx = the AMX-INT8 tiles on the weight's pack (the default here).
func BenchmarkQuantPrefillAMX(b *testing.B) {
	if !amxOn() {
		b.Skip("no AMX-INT8")
	}
	shapes := [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}}
	benchPrefillAMXSweep(b, []tensor.DType{tensor.Q8_0, tensor.Q4_0}, shapes)
}

// benchPrefillAMXSweep runs vnni and amx alternated over two rounds for every type, m of
// amxBenchMs, shape and thread count.
func benchPrefillAMXSweep(b *testing.B, dts []tensor.DType, shapes [][2]int) {
	for _, dt := range dts {
		for _, m := range amxBenchMs {
			for _, sh := range shapes {
				n, k := sh[0], sh[1]
				w := randQuantFast(b, dt, n, k)
				x := qRandVec(rand.New(rand.NewPCG(2, 3)), m*k, 1)
				out := make([]float32, m*n)
				for _, th := range []int{1, 2} {
					p := NewPool(th)
					for round := 0; round < 2; round++ {
						for _, mode := range []string{"vnni", "amx"} {
							name := fmt.Sprintf("%s/%dx%d/m%d/t%d/%s/r%d", dt, n, k, m, th, mode, round)
							b.Run(name, func(b *testing.B) { benchPrefillAMX(b, p, out, x, w, m, th, mode) })
						}
					}
				}
			}
		}
	}
}

func benchPrefillAMX(b *testing.B, p *Pool, out, x []float32, w *tensor.Tensor, m, th int, mode string) {
	defer func() { useAMX = true }()
	useAMX = mode == "amx"
	if PrepackQ8(w) {
		defer DropPackQ8(w)
	}
	if err := p.MatMul(out, x, w, m); err != nil { // the pack, made once
		b.Fatal(err)
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

// amxBenchMs are BenchmarkQuantPrefillAMX's token counts: prefill chunks, and a few
// concurrent sequences' decode steps (a Q8_0 weight with a pack runs the AMX tile padded to 16
// tokens for every m >= 2, so that its results do not depend on m).
var amxBenchMs = []int{64, 512, 2, 4, 8}

// BenchmarkAMXQ8Pack: repacking a TinyLlama-shaped 5632x2048 Q8_0 weight into the AMX tile's
// 16-row groups (the one-time cost per weight, on its first prefill), MB/s of stored rows.
func BenchmarkAMXQ8Pack(b *testing.B) {
	w := randQuantFast(b, tensor.Q8_0, 5632, 2048)
	for b.Loop() {
		newAMXQ8Pack(Serial, w.Data, 5632, 2048)
	}
	b.SetBytes(int64(len(w.Data)))
}

// BenchmarkQuantPrefillAMXK: Q4_K and Q6_K prefill on the TinyLlama shapes, as
// BenchmarkQuantPrefillAMX: vnni = the AVX-512 VNNI kernels (quant_vnni_k.go), amx = the
// AMX-INT8 tiles on groups unpacked per work item (quant_amxk.go), alternated over rounds.
func BenchmarkQuantPrefillAMXK(b *testing.B) {
	if !amxKOn() {
		b.Skip("no AMX-INT8")
	}
	shapes := [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}, {768, 768}}
	benchPrefillAMXSweep(b, []tensor.DType{tensor.Q4_K, tensor.Q6_K}, shapes)
}
