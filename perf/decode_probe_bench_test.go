package perf

import (
	"encoding/binary"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkDecodeVsProbe compares the Q8_0 decode matmul with the bandwidth probe at the same
// moments: 512 MiB of MADV_HUGEPAGE memory holding TinyLlama-FFN-shaped Q8_0 matrices (5632 x
// 2048) read by the one-token matmul over every matrix (two workers), in turns with a pass of
// bench latency's probe between decode steps (a Prober: four streams, two goroutines). It
// reports each one's median GB/s and the median of the per-turn ratios (matmul over probe):
//
//	go test ./perf -run X -bench DecodeVsProbe -benchtime 20x
func BenchmarkDecodeVsProbe(b *testing.B) {
	const n, k = 5632, 2048
	rowBytes := k / 32 * 34
	mat := n * rowBytes
	mem, release, err := mmap.AnonHuge(BandwidthBytes)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	count := len(mem) / mat
	mem = mem[:count*mat]
	r := rand.New(rand.NewPCG(1, 2))
	for i := range mem {
		mem[i] = byte(r.Uint32())
	}
	for blk := 0; blk < len(mem); blk += 34 { // a scale of 2^-10 per block
		binary.LittleEndian.PutUint16(mem[blk:], 0x1400)
	}
	ws := make([]*tensor.Tensor, count)
	for i := range ws {
		ws[i] = &tensor.Tensor{Name: "w", Type: tensor.Q8_0, Shape: []int{n, k}, Data: mem[i*mat : (i+1)*mat]}
	}
	x := make([]float32, k)
	for i := range x {
		x[i] = r.Float32() - 0.5
	}
	out := make([]float32, n)
	p := kernels.NewPool(2)
	prober := NewProber(2, 256<<20, Huge) // bench latency's probe between decode steps
	defer prober.Close()
	probe := func() float64 { return prober.Pass(4) / 1e9 }
	decode := func() float64 {
		t0 := time.Now()
		for _, w := range ws {
			if err := p.MatMul(out, x, w, 1); err != nil {
				b.Fatal(err)
			}
		}
		return float64(len(mem)) / time.Since(t0).Seconds() / 1e9
	}
	probe()
	decode()
	var pr, de, ratio []float64
	for b.Loop() {
		a, d := probe(), decode()
		pr, de, ratio = append(pr, a), append(de, d), append(ratio, d/a)
	}
	med := func(v []float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(pr), "probe-GB/s")
	b.ReportMetric(med(de), "decode-GB/s")
	b.ReportMetric(med(ratio), "decode/probe")
}
