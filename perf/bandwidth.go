// Package perf holds engine-side performance measurement: the machine's memory read bandwidth
// and llama-bench-style latency runs of a model (prompt processing and token generation).
// It imports compute code; serving-benchmark clients must not import it.
package perf

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
)

// BandwidthBytes is the buffer size ReadBandwidth streams over (well beyond any cache).
const BandwidthBytes = 512 << 20

// Bandwidth is one read-bandwidth measurement.
type Bandwidth struct {
	BytesPerSec  float64 // best pass
	Median       float64 // median pass
	Threads      int
	Bytes        int // bytes read per pass
	Passes       int
	Method       string
	Streams      int     // streams per goroutine of the fastest pattern, which BytesPerSec and Median report
	OneStream    float64 // median of the passes reading each share as one stream
	FourStreams  float64 // median of the passes reading each share as four streams side by side
	EightStreams float64 // median of the passes reading each share as eight streams side by side
	Pages        string  // the memory read: "2 MiB-aligned MADV_HUGEPAGE" or "Go heap"
	HugeBytes    int64   // bytes of the buffer backed by huge pages (from /proc/self/smaps)
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
// per thread, passes times with each share read as one stream, as four streams (its quarters
// side by side) and as eight (its eighths), in turns, and reports the best and median rate of
// the fastest pattern. Decode's kernels read four streams per core; a probe of one stream per
// core would understate what the machine can deliver to them (Zen 5 host: 1 stream 31-34 GB/s
// per core, 4 streams up to 41), and one of four streams what it can deliver at all (Sapphire
// Rapids VM, one core: 1 stream ~8.3 GB/s, 4 streams ~10.8, 8 streams ~12). The sums are AVX2 loops (independent accumulators,
// 64 to 128 bytes of loads per iteration) where the CPU has AVX2, so they are bound by memory
// rather than by instruction throughput; pages are written before timing.
func MeasureReadBandwidth(threads, size, passes, kind int) Bandwidth {
	passes = max(passes, 1)
	pr := NewProber(threads, size, kind)
	defer pr.Close()
	// The first round warms up (goroutines started, TLB, frequency); then the patterns take
	// turns, so all see the same host.
	patterns := [3]int{1, 4, 8}
	for _, s := range patterns {
		pr.Pass(s)
	}
	var rates [3][]float64
	for range passes {
		for i, s := range patterns {
			rates[i] = append(rates[i], pr.Pass(s))
		}
	}
	for i := range rates {
		sort.Float64s(rates[i])
	}
	best, streams := rates[0], 1
	for i := 1; i < len(rates); i++ {
		if median(rates[i]) > median(best) {
			best, streams = rates[i], patterns[i]
		}
	}
	method := "AVX2 vaddps sum"
	if !hasAVX2 {
		method = "Go 8-accumulator sum"
	}
	return Bandwidth{
		BytesPerSec: best[len(best)-1], Median: median(best), Threads: pr.threads,
		Bytes: len(pr.buf) * 4, Passes: passes, Streams: streams,
		OneStream: median(rates[0]), FourStreams: median(rates[1]), EightStreams: median(rates[2]),
		Method: fmt.Sprintf("%s, one contiguous share per goroutine read as %d stream%s (the fastest of 1, 4 and 8 streams: medians %.2f, %.2f and %.2f GB/s)",
			method, streams, map[bool]string{true: "s"}[streams > 1], median(rates[0])/1e9, median(rates[1])/1e9, median(rates[2])/1e9),
		Pages: pr.pages, HugeBytes: pr.huge,
	}
}

// median is the middle value of sorted xs (the upper one of an even count).
func median(xs []float64) float64 { return xs[len(xs)/2] }
