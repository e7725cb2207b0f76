package kernels

import (
	"math/rand"
	"runtime"
	"testing"
	"time"
)

// BenchmarkBcastKernelZ runs the AVX-512 main broadcast kernel alone on cache-resident data (an
// activation tile of bzMR rows x 512 columns, one k block of bcNB weight rows) and reports
// GFLOP/s of its fastest pass by thread CPU time (compare PeakFLOPS(1)).
func BenchmarkBcastKernelZ(b *testing.B) {
	if !useAVX512 {
		b.Skip("no AVX-512")
	}
	const kb = bcKC
	r := rand.New(rand.NewSource(1))
	x := randVec(r, 64*kb, 1)
	w := make([]uint16, bcNB*kb)
	for i := range w {
		w[i] = uint16(0x3000 + r.Intn(0x800))
	}
	out := make([]float32, 64*bcNB)
	g := bcNB / 16 / bzNP
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(1 << 62)
	for b.Loop() {
		c0 := threadCPU()
		for range 20 {
			for i0 := 0; i0 < 64; i0 += bzMR {
				bzKernels[bzMR][0](&x[i0*kb], 4*kb, &w[0], kb, g, &out[i0*bcNB], 4*bcNB, 1)
			}
		}
		best = min(best, time.Duration((threadCPU()-c0)*1e9))
	}
	fl := 20 * 2 * float64(64*bcNB*kb) / 1e9
	b.ReportMetric(fl/best.Seconds(), "GFLOP/s")
}
