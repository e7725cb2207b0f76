package model

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
)

// BenchmarkPrefillQ8Packs compares a prefill (LLMCLOUD_BENCH_PP tokens, default 64) of the
// Q8_0 or Q4_0 model LLMCLOUD_BENCH_MODEL with its weights' packs (kernels.PrepackQ8, the
// default) and without (the same file opened again, registrations dropped), alternating the
// two models run by run in one process. Reported: each one's fastest run in tokens/s (with
// t=1 by the thread's CPU time) and packs/rows; the packs are made in an untimed first run.
func BenchmarkPrefillQ8Packs(b *testing.B) {
	with, without := benchModel(b), benchModel(b)
	for _, t := range without.sws {
		kernels.DropPackQ8(t)
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
				if _, err := m.ForwardTo(logits, m.NewCache(n), ids, 0, false); err != nil {
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
