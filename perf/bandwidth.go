// Package perf holds engine-side performance measurement: the machine's memory read bandwidth
// and llama-bench-style latency runs of a model (prompt processing and token generation).
// It imports compute code; serving-benchmark clients must not import it.
package perf

import (
	"runtime"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/llmcloud/llmcloud/internal/mmap"
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
	Pages       string // the memory read: "2 MiB-aligned MADV_HUGEPAGE" or "Go heap"
	HugeBytes   int64  // bytes of the buffer backed by huge pages (from /proc/self/smaps)
}

// Memory kinds for MeasureReadBandwidth.
const (
	GoHeap = iota // a Go slice: on Linux usually 4 KiB pages
	Huge          // 2 MiB-aligned anonymous memory marked MADV_HUGEPAGE (mmap.AnonHuge)
)

var (
	bwOnce   sync.Once
	bwCached Bandwidth
)

// ReadBandwidth measures (once per process, then cached) the memory read bandwidth with one
// goroutine per CPU over huge-page memory, the pages decode reads weights from (the model
// files are mapped for 2 MiB page-cache folios, internal/mmap); see MeasureReadBandwidth.
func ReadBandwidth() Bandwidth {
	bwOnce.Do(func() { bwCached = MeasureReadBandwidth(runtime.NumCPU(), BandwidthBytes, 5, Huge) })
	return bwCached
}

// MeasureReadBandwidth sums a float32 buffer of size bytes of the given memory kind (GoHeap or
// Huge; Huge falls back to the Go heap if the mapping fails), split into one contiguous share
// per thread, passes times, and reports the best and median rate. The sum is an AVX2 loop (four
// 32-byte loads per iteration, independent accumulators) where the CPU has AVX2, so the loop
// is bound by memory rather than by instruction throughput; pages are written before timing.
func MeasureReadBandwidth(threads, size, passes, kind int) Bandwidth {
	threads = max(threads, 1)
	passes = max(passes, 1)
	n := size / 4
	var buf []float32
	pages := "Go heap"
	if kind == Huge {
		if b, release, err := mmap.AnonHuge(n * 4); err == nil {
			defer release()
			buf = unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
			pages = "2 MiB-aligned MADV_HUGEPAGE"
		}
	}
	if buf == nil {
		buf = make([]float32, n)
	}
	// Distinct content on every page (identical pages could be merged by the host, which
	// would turn the stream into cache hits).
	x := uint32(2463534242)
	for i := range buf {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		buf[i] = float32(x >> 20)
	}
	huge, _ := mmap.HugeBytes(unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), n*4))
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
		Pages:  pages, HugeBytes: huge,
	}
}
