package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkMoEDownDecode runs MatMulEach on a Qwen2-MoE decode step's down matrices (two
// experts' [1024 768] and the shared expert's [1024 2048], Q8_0, each on its own row) from
// 256 MiB of huge-page copies, alternating in each round the 64-row chunks (chunks) and the
// four-stream split (streams, quant_each_streams.go), and reports each one's median GB/s of
// weight bytes and the median of the per-round ratios streams/chunks:
//
//	go test ./kernels -run X -bench MoEDownDecode -benchtime 400x
func BenchmarkMoEDownDecode(b *testing.B) {
	if !quantVNNI {
		b.Skip("no VNNI kernels")
	}
	shapes := [][2]int{{1024, 768}, {1024, 768}, {1024, 2048}}
	var w0 []*tensor.Tensor
	size := 0
	for _, s := range shapes {
		w := randQuantFast(b, tensor.Q8_0, s[0], s[1])
		w0, size = append(w0, w), size+len(w.Data)
	}
	copies := max(2, (256<<20)/size)
	mem, release, err := mmap.AnonHuge(copies * size)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	sets := make([][]*tensor.Tensor, copies)
	off := 0
	for c := range sets {
		for _, w := range w0 {
			d := mem[off : off+len(w.Data)]
			copy(d, w.Data)
			off += len(w.Data)
			sets[c] = append(sets[c], &tensor.Tensor{Name: "w", Type: tensor.Q8_0, Shape: w.Shape, Data: d})
		}
	}
	rng := rand.New(rand.NewPCG(4, 5))
	var xs, outs [][]float32
	for _, s := range shapes {
		xs, outs = append(xs, qRandVec(rng, s[1], 1)), append(outs, make([]float32, s[0]))
	}
	for _, th := range []int{1, 2} {
		p := NewPool(th)
		b.Run(fmt.Sprintf("t%d", th), func(b *testing.B) {
			defer func(v bool) { useEachStreams = v }(useEachStreams)
			secs := make([][]float64, 2)
			var ratios []float64
			i := 0
			for b.Loop() {
				for ci, on := range []bool{false, true} {
					useEachStreams = on
					t0 := time.Now()
					if err := p.MatMulEach(outs, xs, sets[i%copies]); err != nil {
						b.Fatal(err)
					}
					secs[ci] = append(secs[ci], time.Since(t0).Seconds())
					i++
				}
				ratios = append(ratios, secs[0][len(secs[0])-1]/secs[1][len(secs[1])-1])
			}
			b.ReportMetric(float64(size)/median(secs[0])/1e9, "chunks-GB/s")
			b.ReportMetric(float64(size)/median(secs[1])/1e9, "streams-GB/s")
			b.ReportMetric(median(ratios), "streams/chunks")
		})
	}
}
