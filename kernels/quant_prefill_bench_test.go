package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkQuantPrefill: Q8_0 and Q4_0 prefill on the shapes of stories110M and TinyLlama (AVX2
// paths), GOP/s (2·m·n·k), with 1 thread also per second of the thread's CPU time (a busy host
// disturbs that far less). Modes, alternated over three rounds: blocks = the block tiles,
// pairs = the pair tiles (Q8_0: 1 row x 8 tokens; p8_2x3 = 2 rows x 3 tokens, p8_1x4 = 1 row
// x 4 tokens), quads = the Q4_0 quad tiles (the default for k/32 a multiple of 4), h8 = the
// Q8_0 half-interleaved pair tiles (the default; up to 8 tokens, h8_6 up to 6), x4 = the Q4_0
// cross-interleaved quad tiles (the default), q8x = the packed Q8_0 quad tiles (PrepackQ8; the
// default for registered weights), x4p = the packed Q4_0 quad tiles (likewise).
func BenchmarkQuantPrefill(b *testing.B) {
	shapes := [][2]int{{768, 768}, {2048, 768}, {768, 2048}, {2048, 2048}, {5632, 2048}, {2048, 5632}}
	modes := map[tensor.DType][]string{tensor.Q8_0: {"pairs", "h8", "h8_6", "q8x"}, tensor.Q4_0: {"pairs", "quads", "x4", "x4p"}}
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		for _, m := range []int{64, 512} {
			for _, sh := range shapes {
				n, k := sh[0], sh[1]
				w := randQuantFast(b, dt, n, k)
				x := qRandVec(rand.New(rand.NewPCG(2, 3)), m*k, 1)
				out := make([]float32, m*n)
				for _, th := range []int{1, 2} {
					p := NewPool(th)
					for round := 0; round < 3; round++ {
						for _, mode := range modes[dt] {
							name := fmt.Sprintf("%s/%dx%d/m%d/t%d/%s/r%d", dt, n, k, m, th, mode, round)
							b.Run(name, func(b *testing.B) { benchPrefill(b, p, out, x, w, m, th, mode) })
						}
					}
				}
			}
		}
	}
}

func benchPrefill(b *testing.B, p *Pool, out, x []float32, w *tensor.Tensor, m, th int, mode string) {
	vnni, tp, tp8, oR, oT, oq, oq8, ox, oqx, oqp := quantVNNI, tilesP, tilesP8, p8Rows, p8Toks, q4Toks, h8Toks, x4Toks, q8xToks, useQ4P
	defer func() {
		quantVNNI, tilesP, tilesP8, p8Rows, p8Toks, q4Toks, h8Toks, x4Toks, q8xToks, useQ4P = vnni, tp, tp8, oR, oT, oq, oq8, ox, oqx, oqp
	}()
	quantVNNI = false
	if mode == "q8x" || mode == "x4p" {
		PrepackQ8(w)
		defer DropPackQ8(w)
	} else {
		q8xToks, useQ4P = 0, false
	}
	switch mode {
	case "blocks":
		tilesP, tilesP8, q4Toks, h8Toks, x4Toks = [3][5]tileFunc{}, [3][9]tileFunc{}, 0, 0, 0
	case "pairs":
		q4Toks, h8Toks, x4Toks = 0, 0, 0
	case "p8_2x3":
		p8Rows, p8Toks, h8Toks = 2, 3, 0
	case "p8_1x4":
		p8Rows, p8Toks, h8Toks = 1, 4, 0
	case "quads":
		x4Toks = 0
	case "h8_6":
		h8Toks = 6
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
	if th == 1 { // the caller's thread runs the whole matmul
		b.ReportMetric(ops/(threadCPU()-cpu0)/1e9, "GOP/thread-s")
	}
}
