package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/tensor"
	"golang.org/x/sys/unix"
)

// BenchmarkQ8DecodeHuge streams Q8_0 weights of TinyLlama's decode shapes from 2 MiB-aligned
// MADV_HUGEPAGE memory (as decode reads its mmapped model file: internal/mmap), 256 MiB of
// copies so that every call reads from DRAM. Each round runs the one-row VNNI kernel (rowsZ)
// and the four-row one (rows4Z) back to back on different copies, so the pair sees the same
// host load; it reports both kernels' median GB/s of weight bytes and the median of the
// per-round ratios rows4/rows1:
//
//	go test ./kernels -run X -bench Q8DecodeHuge -benchtime 200x
func BenchmarkQ8DecodeHuge(b *testing.B) {
	if !quantVNNI {
		b.Skip("no VNNI kernels")
	}
	for _, sh := range [][2]int{{5632, 2048}, {2048, 5632}, {2048, 2048}} {
		n, k := sh[0], sh[1]
		w0 := randQuantFast(b, tensor.Q8_0, n, k)
		copies := max(2, (256<<20)/len(w0.Data)) &^ 1
		mem, release, err := mmap.AnonHuge(copies * len(w0.Data))
		if err != nil {
			b.Fatal(err)
		}
		ws := make([]*tensor.Tensor, copies)
		for i := range ws {
			d := mem[i*len(w0.Data) : (i+1)*len(w0.Data)]
			copy(d, w0.Data)
			ws[i] = &tensor.Tensor{Name: "w", Type: tensor.Q8_0, Shape: w0.Shape, Data: d}
		}
		x := qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1)
		out := make([]float32, n)
		for _, th := range []int{1, 2} {
			p := NewPool(th)
			b.Run(fmt.Sprintf("%dx%d/t%d", n, k, th), func(b *testing.B) {
				defer func(v bool) { useRows4 = v }(useRows4)
				var s1, s4, ratio []float64
				run := func(r4 bool, w *tensor.Tensor) float64 {
					useRows4 = r4
					t0 := time.Now()
					if err := p.MatMul(out, x, w, 1); err != nil {
						b.Fatal(err)
					}
					return time.Since(t0).Seconds()
				}
				i := 0
				for b.Loop() {
					t1 := run(false, ws[(2*i)%copies])
					t4 := run(true, ws[(2*i+1)%copies])
					s1, s4, ratio = append(s1, t1), append(s4, t4), append(ratio, t1/t4)
					i++
				}
				gbs := func(s []float64) float64 { return float64(len(w0.Data)) / median(s) / 1e9 }
				b.ReportMetric(gbs(s1), "rows1-GB/s")
				b.ReportMetric(gbs(s4), "rows4-GB/s")
				b.ReportMetric(median(ratio), "rows4/rows1")
			})
		}
		_ = release()
	}
}

// median returns the median of xs (xs is sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// BenchmarkQ8RowsCPU calls the one-row and four-row VNNI Q8_0 decode kernels directly on one
// goroutine locked to its thread, over 2048x5632 weights streamed from huge-page memory, and
// reports GB of weights per second of the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which a busy host
// disturbs far less than wall time (a descheduled thread accumulates none), next to wall GB/s.
//
//	go test ./kernels -run X -bench Q8RowsCPU -benchtime 300x
func BenchmarkQ8RowsCPU(b *testing.B) {
	if !quantVNNI {
		b.Skip("no VNNI kernels")
	}
	n, k := 2048, 5632
	w0 := randQuantFast(b, tensor.Q8_0, n, k)
	rs := len(w0.Data) / n
	copies := (256 << 20) / len(w0.Data) &^ 1
	mem, release, err := mmap.AnonHuge(copies * len(w0.Data))
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	for i := 0; i < copies; i++ {
		copy(mem[i*len(w0.Data):], w0.Data)
	}
	a := getQ8Acts(1, k, false)
	a.quantize(Serial, qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1), false)
	a.prepZ(Serial, false)
	out := make([]float32, n)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu1, cpu4, wall1, wall4 []float64
	run := func(r4 bool, w []byte) (cpu, wall float64) {
		c0, t0 := threadCPU(), time.Now()
		if r4 {
			rows4Z(&w[0], rs, n, &a.qs[0], &a.dz[0], &a.cz[0], k/64, &out[0])
		} else {
			rowsZ[0](&w[0], rs, n, &a.qs[0], &a.dz[0], &a.cz[0], k/64, &out[0])
		}
		return threadCPU() - c0, time.Since(t0).Seconds()
	}
	i := 0
	for b.Loop() {
		c, w := run(false, mem[(2*i)%copies*len(w0.Data):])
		cpu1, wall1 = append(cpu1, c), append(wall1, w)
		c, w = run(true, mem[(2*i+1)%copies*len(w0.Data):])
		cpu4, wall4 = append(cpu4, c), append(wall4, w)
		i++
	}
	gb := float64(len(w0.Data)) / 1e9
	b.ReportMetric(gb/median(cpu1), "rows1-GB/cpu-s")
	b.ReportMetric(gb/median(cpu4), "rows4-GB/cpu-s")
	b.ReportMetric(gb/median(wall1), "rows1-GB/s")
	b.ReportMetric(gb/median(wall4), "rows4-GB/s")
}

// threadCPU returns the calling thread's CPU time in seconds.
func threadCPU() float64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return float64(ts.Nano()) / 1e9
}
