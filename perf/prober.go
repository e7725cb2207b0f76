// This file holds Prober: the read-bandwidth probe's buffer and its pass, kept between passes
// so that a benchmark can probe the memory again and again while it runs (bench latency's
// probes between decode steps) without mapping and writing the buffer each time.
package perf

import (
	"sync"
	"time"
	"unsafe"

	"github.com/llmcloud/llmcloud/internal/mmap"
)

// Prober reads one buffer with threads goroutines, one contiguous share each.
type Prober struct {
	threads int
	buf     []float32
	release func() error // unmaps buf (nil: Go heap)
	pages   string       // "2 MiB-aligned MADV_HUGEPAGE" or "Go heap"
	huge    int64        // bytes of buf on huge pages
	sums    []float32
	sink    float32
}

// NewProber allocates size bytes of the given memory kind (GoHeap, or Huge falling back to the
// Go heap if the mapping fails) and writes distinct content on every page (identical pages
// could be merged by the host, which would turn the stream into cache hits).
func NewProber(threads, size, kind int) *Prober {
	pr := &Prober{threads: max(threads, 1), pages: "Go heap"}
	n := size / 4
	if kind == Huge {
		if b, release, err := mmap.AnonHuge(n * 4); err == nil {
			pr.buf, pr.release = unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), release
			pr.pages = "2 MiB-aligned MADV_HUGEPAGE"
		}
	}
	if pr.buf == nil {
		pr.buf = make([]float32, n)
	}
	x := uint32(2463534242)
	for i := range pr.buf {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		pr.buf[i] = float32(x >> 20)
	}
	pr.huge, _ = mmap.HugeBytes(unsafe.Slice((*byte)(unsafe.Pointer(&pr.buf[0])), n*4))
	pr.sums = make([]float32, pr.threads)
	return pr
}

// Bytes is the size of one pass.
func (pr *Prober) Bytes() int { return len(pr.buf) * 4 }

// Pass reads every share once, as one stream, four or eight (its quarters or eighths side by
// side: four is the pattern decode's kernels read, which a core streams faster on some CPUs;
// eight is faster still on some), and returns the bytes read per second.
func (pr *Prober) Pass(streams int) float64 {
	n := len(pr.buf)
	var wg, start sync.WaitGroup
	start.Add(1)
	wg.Add(pr.threads)
	for t := 0; t < pr.threads; t++ {
		go func(t int) {
			defer wg.Done()
			start.Wait()
			lo, hi := (t*n/pr.threads)&^31, ((t+1)*n/pr.threads)&^31
			if t == pr.threads-1 {
				hi = n
			}
			switch streams {
			case 8:
				pr.sums[t] = sum8(pr.buf[lo:hi])
			case 4:
				pr.sums[t] = sum4(pr.buf[lo:hi])
			default:
				pr.sums[t] = sum(pr.buf[lo:hi])
			}
		}(t)
	}
	t0 := time.Now()
	start.Done()
	wg.Wait()
	for _, s := range pr.sums {
		pr.sink += s
	}
	return float64(n*4) / time.Since(t0).Seconds()
}

// Close releases the buffer.
func (pr *Prober) Close() error {
	pr.buf = nil
	if pr.release != nil {
		return pr.release()
	}
	return nil
}
