package perf

import (
	"math/rand/v2"
	"testing"
)

func TestSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 1, 31, 32, 33, 64, 1000, 4096 + 7} {
		x := make([]float32, n)
		var want float64
		for i := range x {
			x[i] = float32(r.IntN(100))
			want += float64(x[i])
		}
		if got := sum(x); float64(got) != want {
			t.Errorf("sum of %d values = %v, want %v", n, got, want)
		}
	}
}

func BenchmarkReadBandwidth(b *testing.B) {
	for b.Loop() {
		bw := MeasureReadBandwidth(2, 512<<20, 3)
		b.ReportMetric(bw.BytesPerSec/1e9, "GB/s")
	}
}

func BenchmarkReadBandwidth1T(b *testing.B) {
	for b.Loop() {
		bw := MeasureReadBandwidth(1, 512<<20, 3)
		b.ReportMetric(bw.BytesPerSec/1e9, "GB/s")
	}
}
