package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
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
			ws, release := hugeCopies(b, w0, 4, 256<<20)
			copies := len(ws)
			x := qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1)
			out := make([]float32, n)
			for _, th := range []int{1, 2} {
				p := NewPool(th)
				b.Run(fmt.Sprintf("%s/%dx%d/t%d", dt, n, k, th), func(b *testing.B) {
					defer func(v [2]bool, mk int) { useStreams8, streams8MinK = v, mk }(useStreams8, streams8MinK)
					streams8MinK = 0
					var secs [2][]float64
					var ratios []float64
					i := 0
					for b.Loop() {
						for c := range 2 {
							useStreams8 = [2]bool{c == 1, c == 1}
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

// BenchmarkStreams8CPU calls the four- and eight-stream decode kernels (Q8_0: q8_0Rows4P and
// q8_0Rows8P; Q4_0: q4_0Rows4P and q4_0Rows8P) directly on one goroutine locked to its thread,
// each call over a whole matrix cut into 4 or 8 streams, and reports GB of weights per second
// of the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: a descheduled thread accumulates none, so
// other jobs on the host disturb it far less than wall time) and the median of the
// per-round ratios, the kernels alternating. dram: 2048x5632 weights (dram-k2048: 5632x2048)
// streamed from 256 MiB of huge-page memory; l1: 16 rows of 2048 values called 200 times per round (in-core speed).
//
//	go test ./kernels -run X -bench Streams8CPU -benchtime 100x
func BenchmarkStreams8CPU(b *testing.B) {
	if !quantVNNI {
		b.Skip("no VNNI kernels")
	}
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		for _, c := range []struct {
			name         string
			n, k, calls  int
			copiesTarget int
		}{{"dram", 2048, 5632, 1, 256 << 20}, {"dram-k2048", 5632, 2048, 1, 256 << 20}, {"l1", 16, 2048, 200, 0}} {
			b.Run(fmt.Sprintf("%s/%s", dt, c.name), func(b *testing.B) {
				q4 := dt == tensor.Q4_0
				n, k := c.n, c.k
				w0 := randQuantFast(b, dt, n, k)
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
				a := getQ8Acts(1, k, q4)
				a.quantize(Serial, qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1), q4)
				if q4 {
					a.prepQuad()
				} else {
					a.prepZ(Serial, false)
				}
				out := make([]float32, n)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var cpus [2][]float64
				var ratio []float64
				var ws [8]*byte
				var outs [8]*float32
				run := func(streams int, w []byte) float64 {
					q := n / streams
					for j := 0; j < streams; j++ {
						ws[j], outs[j] = &w[j*q*rs], &out[j*q]
					}
					c0 := threadCPU()
					for range c.calls {
						switch {
						case q4 && streams == 8:
							q4Rows8P(&ws[0], rs, q, &a.x4[0], &a.d4[0], &a.c4[0], k/128, &outs[0], 4)
						case q4:
							q4Rows4P(&ws[0], rs, q, &a.x4[0], &a.d4[0], &a.c4[0], k/128, &outs[0], 4)
						case streams == 8:
							rows8P(&ws[0], rs, q, &a.qs[0], &a.dz[0], &a.fz[0], k/64, &outs[0], 4)
						default:
							rows4P(&ws[0], rs, q, &a.qs[0], &a.dz[0], &a.fz[0], k/64, &outs[0], 4)
						}
					}
					return threadCPU() - c0
				}
				i := 0
				for b.Loop() {
					c4 := run(4, mem[(2*i)%copies*size:])
					c8 := run(8, mem[(2*i+1)%copies*size:])
					cpus[0], cpus[1] = append(cpus[0], c4), append(cpus[1], c8)
					ratio = append(ratio, c4/c8)
					i++
				}
				gb := float64(size*c.calls) / 1e9
				b.ReportMetric(gb/median(cpus[0]), "s4-GB/cpu-s")
				b.ReportMetric(gb/median(cpus[1]), "s8-GB/cpu-s")
				b.ReportMetric(median(ratio), "s8/s4-cpu")
			})
		}
	}
}
