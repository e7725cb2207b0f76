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
// copies so that every call reads from DRAM, through Pool.MatMul. Each round runs four
// configurations back to back on different copies, so they see the same host load: the
// one-row VNNI kernel with the rows handed out by a shared counter (rows1/dyn), the four-row
// kernel the same way (rows4/dyn), the four-row kernel over one contiguous share per worker
// in 64-row chunks with stealing (rows4/steal), and each share read as four streams
// (rows4/streams, the default: gemvStreams). Without VNNI, the AVX2 kernels: q8_0Rows in
// 64-row chunks (rows1/dyn, rows1/steal) and q8_0Rows4A over four streams (rows4/streams). It
// reports each one's median GB/s of weight bytes and the medians of the per-round ratios to
// rows1/dyn:
//
//	go test ./kernels -run X -bench Q8DecodeHuge -benchtime 200x
func BenchmarkQ8DecodeHuge(b *testing.B) {
	if !quantVNNI && !quantAsm {
		b.Skip("no VNNI or AVX2 kernels")
	}
	type config struct {
		name                 string
		rows4, stel, streams bool
	}
	configs := []config{{"rows1/dyn", false, false, false}, {"rows4/dyn", true, false, false},
		{"rows4/steal", true, true, false}, {"rows4/streams", true, true, true}}
	if !quantVNNI { // AVX2: q8_0Rows in 64-row chunks against q8_0Rows4A's four streams
		configs = []config{{"rows1/dyn", true, false, false}, {"rows1/steal", true, true, false}, {"rows4/streams", true, true, true}}
	}
	for _, sh := range [][2]int{{5632, 2048}, {2048, 5632}, {2048, 2048}} {
		n, k := sh[0], sh[1]
		w0 := randQuantFast(b, tensor.Q8_0, n, k)
		ws, release := hugeCopies(b, w0, len(configs), 256<<20)
		copies := len(ws)
		x := qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1)
		out := make([]float32, n)
		for _, th := range []int{1, 2} {
			p := NewPool(th)
			b.Run(fmt.Sprintf("%dx%d/t%d", n, k, th), func(b *testing.B) {
				defer func(r4, st, sm bool) { useRows4, gemvSteal, useStreams = r4, st, sm }(useRows4, gemvSteal, useStreams)
				secs := make([][]float64, len(configs))
				ratios := make([][]float64, len(configs))
				i := 0
				for b.Loop() {
					for ci, c := range configs {
						useRows4, gemvSteal, useStreams = c.rows4, c.stel, c.streams
						t0 := time.Now()
						if err := p.MatMul(out, x, ws[i%copies], 1); err != nil {
							b.Fatal(err)
						}
						secs[ci] = append(secs[ci], time.Since(t0).Seconds())
						ratios[ci] = append(ratios[ci], secs[0][len(secs[0])-1]/secs[ci][len(secs[ci])-1])
						i++
					}
				}
				for ci, c := range configs {
					b.ReportMetric(float64(len(w0.Data))/median(secs[ci])/1e9, c.name+"-GB/s")
					if ci > 0 {
						b.ReportMetric(median(ratios[ci]), c.name+"/rows1/dyn")
					}
				}
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

// BenchmarkQ8RowsCPU calls the one-row and four-row VNNI Q8_0 decode kernels (without VNNI:
// q8_0Rows and q8_0Rows4A over four streams a quarter of the rows apart) directly on one
// goroutine locked to its thread and reports GB of weights per second of the thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID), which a busy host disturbs far less than wall time (a descheduled
// thread accumulates none), next to wall GB/s; medians over rounds that alternate the kernels.
// dram: 2048x5632 weights streamed from 256 MiB of huge-page memory; l1: 8 rows of 2048
// values (17 KiB) called 200 times per round, the kernels' in-core speed.
//
//	go test ./kernels -run X -bench Q8RowsCPU -benchtime 300x
func BenchmarkQ8RowsCPU(b *testing.B) {
	if !quantVNNI && !quantAsm {
		b.Skip("no VNNI or AVX2 kernels")
	}
	for _, c := range []struct {
		name         string
		n, k, calls  int
		copiesTarget int
	}{{"dram", 2048, 5632, 1, 256 << 20}, {"l1", 8, 2048, 200, 0}} {
		b.Run(c.name, func(b *testing.B) {
			n, k := c.n, c.k
			w0 := randQuantFast(b, tensor.Q8_0, n, k)
			size, rs := len(w0.Data), len(w0.Data)/n
			copies := max(2, c.copiesTarget/size&^1)
			mem, release, err := mmap.AnonHuge(copies * size)
			if err != nil {
				b.Fatal(err)
			}
			defer release()
			for i := 0; i < copies; i++ {
				copy(mem[i*size:], w0.Data)
			}
			a := getQ8Acts(1, k, false)
			a.quantize(Serial, qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1), false)
			if quantVNNI {
				a.prepZ(Serial, false)
			} else {
				a.pairScales()
			}
			out := make([]float32, n)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu1, cpu4, wall1, wall4, ratio []float64
			run := func(r4 bool, w []byte) (cpu, wall float64) {
				c0, t0 := threadCPU(), time.Now()
				for range c.calls {
					switch {
					case !quantVNNI && r4: // four streams a quarter of the rows apart
						q := n / 4
						ws := [4]*byte{&w[0], &w[q*rs], &w[2*q*rs], &w[3*q*rs]}
						outs := [4]*float32{&out[0], &out[q], &out[2*q], &out[3*q]}
						rows4A(&ws[0], rs, q, &a.qs[0], &a.d2[0], k/64, &outs[0], 4)
					case !quantVNNI:
						q8Rows(&w[0], rs, n, &a.qs[0], &a.d[0], k/32, &out[0])
					case r4:
						rows4Z(&w[0], rs, n, &a.qs[0], &a.dz[0], &a.fz[0], k/64, &out[0])
					default:
						rowsZ[0](&w[0], rs, n, &a.qs[0], &a.dz[0], &a.cz[0], k/64, &out[0])
					}
				}
				return threadCPU() - c0, time.Since(t0).Seconds()
			}
			i := 0
			for b.Loop() {
				c1, w1 := run(false, mem[(2*i)%copies*size:])
				c4, w4 := run(true, mem[(2*i+1)%copies*size:])
				cpu1, wall1, cpu4, wall4 = append(cpu1, c1), append(wall1, w1), append(cpu4, c4), append(wall4, w4)
				ratio = append(ratio, c1/c4)
				i++
			}
			gb := float64(size*c.calls) / 1e9
			b.ReportMetric(gb/median(cpu1), "rows1-GB/cpu-s")
			b.ReportMetric(gb/median(cpu4), "rows4-GB/cpu-s")
			b.ReportMetric(median(ratio), "rows4/rows1-cpu")
			b.ReportMetric(gb/median(wall1), "rows1-GB/s")
			b.ReportMetric(gb/median(wall4), "rows4-GB/s")
		})
	}
}

// threadCPU returns the calling thread's CPU time in seconds.
func threadCPU() float64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return float64(ts.Nano()) / 1e9
}
