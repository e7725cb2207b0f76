package model

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
)

// BenchmarkPrefillF16Packs compares a prefill (LLMCLOUD_BENCH_PP tokens, default 64) of the F16
// model LLMCLOUD_BENCH_MODEL with its weights' packs (kernels.PrepackF16, the default) and
// without (the same file opened again, packs dropped), alternating the two models run by
// run in one process. Reported: each one's fastest run in tokens/s — with t=1 by the thread's
// CPU time, which other processes on a shared host inflate far less than wall time — and
// packs/rows.
func BenchmarkPrefillF16Packs(b *testing.B) {
	with, without := benchModel(b), benchModel(b)
	for _, t := range without.sws {
		kernels.DropPackF16(t)
	}
	n := 64
	if s := os.Getenv("LLMCLOUD_BENCH_PP"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (i*7919 + 13) % with.Config.Vocab
	}
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprintf("t=%d", th), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p := kernels.NewPool(th)
			ms := []*Model{without, with}
			best := [2]time.Duration{1 << 62, 1 << 62}
			var logits []float32
			for _, m := range ms {
				m.Pool = p
				c := m.NewCache(n)
				if _, err := m.ForwardTo(logits, c, ids, 0, false); err != nil { // packs made here
					b.Fatal(err)
				}
			}
			for b.Loop() {
				for v, m := range ms {
					c := m.NewCache(n)
					t0, c0 := time.Now(), threadCPU()
					var err error
					if logits, err = m.ForwardTo(logits, c, ids, 0, false); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					if th == 1 {
						d = threadCPU() - c0
					}
					best[v] = min(best[v], d)
				}
			}
			b.ReportMetric(float64(n)/best[0].Seconds(), "rows-tok/s")
			b.ReportMetric(float64(n)/best[1].Seconds(), "packs-tok/s")
			b.ReportMetric(best[0].Seconds()/best[1].Seconds(), "packs/rows")
		})
	}
}

// threadCPU is the calling OS thread's CPU time (user + system).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
