package kernels

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkGemvModel runs m=1 matmuls over a model's worth of F16 weights that do not fit in
// any cache (stories110M: 768-wide, TinyLlama: 2048-wide layers), reporting weight GB/s, with
// each worker's rows read as four streams (the default), as consecutive groups of four rows,
// or one row after another; with AVX-512 also as eight streams (gemvF16x8).
func BenchmarkGemvModel(b *testing.B) {
	for _, s := range []struct {
		name     string
		dim, ffn int
		layers   int
	}{{"stories110M", 768, 2048, 12}, {"tinyllama-8layers", 2048, 5632, 8}} {
		r := rand.New(rand.NewSource(1))
		var ws []*tensor.Tensor
		for l := 0; l < s.layers; l++ {
			for _, sh := range [][2]int{{s.dim, s.dim}, {s.dim, s.dim}, {s.dim, s.dim}, {s.dim, s.dim}, {s.ffn, s.dim}, {s.ffn, s.dim}, {s.dim, s.ffn}} {
				w, _ := tensor.Convert(f32Tensor("w", []int{sh[0], sh[1]}, randVec(r, sh[0]*sh[1], 0.1)), tensor.F16)
				ws = append(ws, w)
			}
		}
		// Weights live in 2 MiB-aligned MADV_HUGEPAGE memory, as decode reads its mmapped file.
		bytes, release := intoHuge(b, ws)
		defer release()
		x := randVec(r, max(s.dim, s.ffn), 1)
		out := make([]float32, max(s.dim, s.ffn))
		for _, th := range []int{1, 2} {
			for _, mode := range []string{"8streams", "4streams", "4interleaved", "sequential"} {
				if mode == "8streams" && !hasF16x8 {
					continue
				}
				p := NewPool(th)
				b.Run(fmt.Sprintf("%s/t=%d/rows=%s", s.name, th, mode), func(b *testing.B) {
					defer func(v, st, e bool) { gemvOneRow, useFloatStreams, useF16x8 = v, st, e }(gemvOneRow, useFloatStreams, useF16x8)
					gemvOneRow, useFloatStreams = mode == "sequential", strings.HasSuffix(mode, "streams")
					useF16x8 = mode == "8streams"
					b.SetBytes(int64(bytes))
					for b.Loop() {
						for _, w := range ws {
							p.MatMul(out, x, w, 1)
						}
					}
				})
			}
		}
	}
}
