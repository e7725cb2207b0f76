package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkDecodeStreams8 compares the four- and eight-stream decode of Q8_0 and Q4_0 weights
// (gemvStreams with useStreams8 off and on) on TinyLlama's decode shapes, streamed from 2
// MiB-aligned MADV_HUGEPAGE memory (at least 256 MiB of copies, so every call reads from
// DRAM) through Pool.MatMul. Each iteration runs the two back to back on different copies, so
// they see the same host load; it reports each one's median GB/s of weight bytes and the
// median of the per-iteration ratios (eight over four):
//
//	go test ./kernels -run X -bench DecodeStreams8 -benchtime 100x
func BenchmarkDecodeStreams8(b *testing.B) {
	if !quantVNNI {
		b.Skip("no VNNI kernels: the eight-stream kernels are not used")
	}
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		for _, sh := range [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}} {
			n, k := sh[0], sh[1]
			w0 := randQuantFast(b, dt, n, k)
			copies := max(4, (256<<20)/len(w0.Data))
			mem, release, err := mmap.AnonHuge(copies * len(w0.Data))
			if err != nil {
				b.Fatal(err)
			}
			ws := make([]*tensor.Tensor, copies)
			for i := range ws {
				d := mem[i*len(w0.Data) : (i+1)*len(w0.Data)]
				copy(d, w0.Data)
				ws[i] = &tensor.Tensor{Name: "w", Type: dt, Shape: w0.Shape, Data: d}
			}
			x := qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1)
			out := make([]float32, n)
			for _, th := range []int{1, 2} {
				p := NewPool(th)
				b.Run(fmt.Sprintf("%s/%dx%d/t%d", dt, n, k, th), func(b *testing.B) {
					defer func(v bool) { useStreams8 = v }(useStreams8)
					var secs [2][]float64
					var ratios []float64
					i := 0
					for b.Loop() {
						for c := range 2 {
							useStreams8 = c == 1
							t0 := time.Now()
							if err := p.MatMul(out, x, ws[i%copies], 1); err != nil {
								b.Fatal(err)
							}
							secs[c] = append(secs[c], time.Since(t0).Seconds())
							i++
						}
						ratios = append(ratios, secs[0][len(secs[0])-1]/secs[1][len(secs[1])-1])
					}
					b.ReportMetric(float64(len(w0.Data))/median(secs[0])/1e9, "s4-GB/s")
					b.ReportMetric(float64(len(w0.Data))/median(secs[1])/1e9, "s8-GB/s")
					b.ReportMetric(median(ratios), "s8/s4")
				})
			}
			_ = release()
		}
	}
}
