package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkDecodeModelStreams8 decides the installed eight-stream choice (streams8Default) on
// whole decode steps rather than single matrices: the one-token matmuls of eight TinyLlama
// layers (q, k, v, o, gate, up, down: 2048 wide, FFN 5632, 4 KV heads of 64) in F16 and Q4_0,
// about a third of the model's weights, from 2 MiB-aligned MADV_HUGEPAGE memory, on two
// workers. Each iteration runs one pass with four streams and one with eight, back to back, so
// both see the same host; it reports each one's median GB/s and the median of the per-pass
// ratios (eight over four):
//
//	go test ./kernels -run X -bench DecodeModelStreams8 -benchtime 40x
func BenchmarkDecodeModelStreams8(b *testing.B) {
	if !useAVX512 || !quantVNNI {
		b.Skip("no AVX-512 VNNI: the eight-stream kernels are not used")
	}
	const dim, ffn, kv, layers = 2048, 5632, 256, 8
	shapes := [][2]int{{dim, dim}, {kv, dim}, {kv, dim}, {dim, dim}, {ffn, dim}, {ffn, dim}, {dim, ffn}}
	for _, dt := range []tensor.DType{tensor.F16, tensor.Q4_0} {
		var ws []*tensor.Tensor
		r := rand.New(rand.NewPCG(1, 2))
		for range layers {
			for _, sh := range shapes {
				if dt == tensor.F16 {
					w, _ := tensor.Convert(f32Tensor("w", []int{sh[0], sh[1]}, qRandVec(r, sh[0]*sh[1], 0.1)), tensor.F16)
					ws = append(ws, w)
				} else {
					ws = append(ws, randQuantFast(b, dt, sh[0], sh[1]))
				}
			}
		}
		bytes, release := intoHuge(b, ws)
		x := qRandVec(r, ffn, 1)
		out := make([]float32, ffn)
		p := NewPool(2)
		b.Run(fmt.Sprintf("%s/t2", dt), func(b *testing.B) {
			defer func(q4, f16 bool, mk int) { useStreams8[1], useF16x8, streams8MinK = q4, f16, mk }(useStreams8[1], useF16x8, streams8MinK)
			var secs [2][]float64
			var ratios []float64
			for b.Loop() {
				for c := range 2 {
					useStreams8[1], useF16x8 = c == 1, c == 1
					t0 := time.Now()
					for _, w := range ws {
						if err := p.MatMul(out[:w.Shape[0]], x[:w.Shape[1]], w, 1); err != nil {
							b.Fatal(err)
						}
					}
					secs[c] = append(secs[c], time.Since(t0).Seconds())
				}
				ratios = append(ratios, secs[0][len(secs[0])-1]/secs[1][len(secs[1])-1])
			}
			b.ReportMetric(float64(bytes)/median(secs[0])/1e9, "s4-GB/s")
			b.ReportMetric(float64(bytes)/median(secs[1])/1e9, "s8-GB/s")
			b.ReportMetric(median(ratios), "s8/s4")
		})
		_ = release()
	}
}
