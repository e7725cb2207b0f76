// Package perf holds engine-side performance measurement: the machine's memory read bandwidth
// and llama-bench-style latency runs of a model (prompt processing and token generation).
// It imports compute code; serving-benchmark clients must not import it.
package perf

import (
	"runtime"
	"sort"
	"sync"
	"time"
)

// BandwidthBytes is the buffer size ReadBandwidth streams over (well beyond any cache).
const BandwidthBytes = 512 << 20

// Bandwidth is one read-bandwidth measurement.
type Bandwidth struct {
	BytesPerSec float64 // best pass
	Median      float64 // median pass
	Threads     int
	Bytes       int // bytes read per pass
	Passes      int
	Method      string
}

var (
	bwOnce   sync.Once
	bwCached Bandwidth
)

// ReadBandwidth measures (once per process, then cached) the memory read bandwidth with one
// goroutine per CPU; see MeasureReadBandwidth.
func ReadBandwidth() Bandwidth {
	bwOnce.Do(func() { bwCached = MeasureReadBandwidth(runtime.NumCPU(), BandwidthBytes, 5) })
	return bwCached
}

// MeasureReadBandwidth sums a float32 buffer of size bytes, split into one contiguous share per
// thread, passes times, and reports the best and median rate. The sum is an AVX2 loop (four
// 32-byte loads per iteration, independent accumulators) where the CPU has AVX2, so the loop
// is bound by memory rather than by instruction throughput; pages are written before timing.
func MeasureReadBandwidth(threads, size, passes int) Bandwidth {
	threads = max(threads, 1)
	passes = max(passes, 1)
	n := size / 4
	buf := make([]float32, n)
	// Distinct content on every page (identical pages could be merged by the host, which
	// would turn the stream into cache hits).
	x := uint32(2463534242)
	for i := range buf {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		buf[i] = float32(x >> 20)
	}
	var sink float32
	sums := make([]float32, threads)
	rates := make([]float64, 0, passes)
	for range passes + 1 { // the first pass warms up (goroutines started, TLB, frequency)
		var wg sync.WaitGroup
		var start sync.WaitGroup
		start.Add(1)
		wg.Add(threads)
		for t := 0; t < threads; t++ {
			go func(t int) {
				defer wg.Done()
				start.Wait()
				lo, hi := (t*n/threads)&^31, ((t+1)*n/threads)&^31
				if t == threads-1 {
					hi = n
				}
				sums[t] = sum(buf[lo:hi])
			}(t)
		}
		t0 := time.Now()
		start.Done()
		wg.Wait()
		rates = append(rates, float64(n*4)/time.Since(t0).Seconds())
		for _, s := range sums {
			sink += s
		}
	}
	rates = rates[1:]
	sort.Float64s(rates)
	method := "AVX2 vaddps sum"
	if !hasAVX2 {
		method = "Go 8-accumulator sum"
	}
	_ = sink
	return Bandwidth{
		BytesPerSec: rates[len(rates)-1], Median: rates[len(rates)/2], Threads: threads,
		Bytes: n * 4, Passes: passes,
		Method: method + ", one contiguous share per goroutine",
	}
}
