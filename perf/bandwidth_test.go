package perf

import (
	"math/rand/v2"
	"testing"
)

func TestSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 1, 31, 32, 33, 63, 64, 65, 1000, 4096 + 7, 3*4096 + 100} {
		x := make([]float32, n)
		var want float64
		for i := range x {
			x[i] = float32(r.IntN(100))
			want += float64(x[i])
		}
		if got := sum(x); float64(got) != want {
			t.Errorf("sum of %d values = %v, want %v", n, got, want)
		}
		if got := sum4(x); float64(got) != want {
			t.Errorf("four-stream sum of %d values = %v, want %v", n, got, want)
		}
		if got := sum8(x); float64(got) != want {
			t.Errorf("eight-stream sum of %d values = %v, want %v", n, got, want)
		}
	}
}

// BenchmarkReadBandwidth measures 2 threads over Go-heap memory and over 2 MiB-aligned
// MADV_HUGEPAGE memory, alternately in one process, so the two can be compared.
func BenchmarkReadBandwidth(b *testing.B) {
	for _, c := range []struct {
		name string
		kind int
	}{{"heap", GoHeap}, {"huge", Huge}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				bw := MeasureReadBandwidth(2, 512<<20, 3, c.kind)
				b.ReportMetric(bw.BytesPerSec/1e9, "GB/s")
				b.ReportMetric(bw.Median/1e9, "median-GB/s")
				b.ReportMetric(float64(bw.HugeBytes)/float64(bw.Bytes), "huge-share")
				b.ReportMetric(bw.OneStream/1e9, "1stream-GB/s")
				b.ReportMetric(bw.FourStreams/1e9, "4streams-GB/s")
				b.ReportMetric(bw.EightStreams/1e9, "8streams-GB/s")
			}
		})
	}
}

func BenchmarkReadBandwidth1T(b *testing.B) {
	for b.Loop() {
		bw := MeasureReadBandwidth(1, 512<<20, 3, Huge)
		b.ReportMetric(bw.BytesPerSec/1e9, "GB/s")
		b.ReportMetric(bw.OneStream/1e9, "1stream-GB/s")
		b.ReportMetric(bw.FourStreams/1e9, "4streams-GB/s")
		b.ReportMetric(bw.EightStreams/1e9, "8streams-GB/s")
	}
}
