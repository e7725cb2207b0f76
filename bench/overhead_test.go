package bench

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/bench/benchtest"
)

// overhead sends n one-token requests at rate req/s to an instant server and returns what the
// client adds: per request, the client's E2E latency minus the server's own handling time
// (handler entry to the flush of the token), and the dispatch lag (actual send minus the
// arrival schedule). Both sides use the same process clock.
type overheadStats struct {
	added, lag       []float64 // ms, sorted
	achievedRate     float64
	completed, total int
}

func measureOverhead(t testing.TB, n int, rate float64) overheadStats {
	srv := benchtest.New(benchtest.Script{Tokens: 1}, true)
	defer srv.Close()
	res := &Result{}
	cfg := Config{Client: newClient(srv.URL, false), Requests: wordRequestsTB(t, n, 8, 1),
		RequestRate: Rate(rate), NumWarmups: 50, Seed: 1}
	outs := Run(context.Background(), cfg, res)
	var st overheadStats
	st.total, st.completed, st.achievedRate = n, res.Completed, res.RequestThroughput
	for i, o := range outs {
		tm, ok := srv.Timing(idOf(i))
		if !o.Success || !ok || len(tm.Writes) != 1 {
			continue
		}
		server := tm.Writes[0].Sub(tm.Received)
		st.added = append(st.added, float64(o.Latency-server)/float64(time.Millisecond))
		st.lag = append(st.lag, float64(o.Start.Sub(o.Scheduled))/float64(time.Millisecond))
	}
	slices.Sort(st.added)
	slices.Sort(st.lag)
	return st
}

// TestClientOverhead: 1,000 small requests/s for one second. It is a measurement, so it runs
// only when asked (LLMCLOUD_TIMING_TESTS=1, on a quiet machine): under `go test ./...` the
// other packages' tests share the two cores and the numbers say nothing about the client.
// BenchmarkClientOverhead is the same measurement as a benchmark; docs/bench.md records both.
func TestClientOverhead(t *testing.T) {
	if os.Getenv("LLMCLOUD_TIMING_TESTS") == "" || raceEnabled {
		t.Skip("timing measurement: set LLMCLOUD_TIMING_TESTS=1 on a quiet machine to run it")
	}
	st := measureOverhead(t, 1000, 1000)
	if st.completed != st.total {
		t.Fatalf("completed %d of %d", st.completed, st.total)
	}
	p50, p99 := Percentile(st.added, 50), Percentile(st.added, 99)
	lag99 := Percentile(st.lag, 99)
	t.Logf("achieved %.0f req/s; added latency p50 %.3f ms p99 %.3f ms; dispatch lag p50 %.3f ms p99 %.3f ms",
		st.achievedRate, p50, p99, Percentile(st.lag, 50), lag99)
	if st.achievedRate < 900 {
		t.Errorf("achieved %.0f req/s, want about 1000", st.achievedRate)
	}
	if p50 > 1 || p99 > 100 || lag99 > 100 {
		t.Errorf("client overhead too high: added p50 %.3f p99 %.3f ms, dispatch lag p99 %.3f ms", p50, p99, lag99)
	}
}

// BenchmarkClientOverhead reports the client's added latency at 1,000 req/s (b.N is ignored
// beyond running the measurement once per iteration).
func BenchmarkClientOverhead(b *testing.B) {
	for b.Loop() {
		st := measureOverhead(b, 1000, 1000)
		b.ReportMetric(Percentile(st.added, 50), "p50-added-ms")
		b.ReportMetric(Percentile(st.added, 99), "p99-added-ms")
		b.ReportMetric(Percentile(st.lag, 99), "p99-lag-ms")
		b.ReportMetric(st.achievedRate, "req/s")
	}
}
