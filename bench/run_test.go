package bench

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/bench/benchtest"
)

func newClient(url string, chat bool) *Client {
	ep := "/v1/completions"
	if chat {
		ep = "/v1/chat/completions"
	}
	return &Client{URL: url + ep, Chat: chat, Model: "scripted", HTTP: NewHTTPClient(30 * time.Second), RequestIDs: true}
}

func wordRequests(t *testing.T, n, in, out int) []Request { return wordRequestsTB(t, n, in, out) }

func wordRequestsTB(t testing.TB, n, in, out int) []Request {
	t.Helper()
	reqs, err := RandomRequests(Words{}, RandomOptions{InputLen: in, OutputLen: out}, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

func within(t *testing.T, name string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.3f, want %.3f within %.1f%%", name, got, want, rel*100)
	} else {
		t.Logf("%s = %.3f (truth %.3f)", name, got, want)
	}
}

// withinLate is within, except that got may also be up to lateMS above: for latencies timed from
// the client's send, which include the client's and the loopback's share (never negative), and
// which a machine with more runnable threads than CPUs stretches by milliseconds.
func withinLate(t *testing.T, name string, got, want, rel, lateMS float64) {
	t.Helper()
	if got < want-rel*math.Abs(want) || got > want+rel*math.Abs(want)+lateMS {
		t.Errorf("%s = %.3f, want %.3f within %.1f%% (+%g ms late)", name, got, want, rel*100, lateMS)
	} else {
		t.Logf("%s = %.3f (truth %.3f)", name, got, want)
	}
}

// TestScriptedTimings runs against a server with known timings (TTFT 100 ms, 10 ms between 20
// tokens) and checks every reported metric against the truth within 2% (TTFT and E2EL may be
// up to 3 ms later still: see withinLate).
func TestScriptedTimings(t *testing.T) {
	if raceEnabled {
		t.Skip("timing test")
	}
	for _, chat := range []bool{false, true} {
		name := "completions"
		if chat {
			name = "chat"
		}
		t.Run(name, func(t *testing.T) {
			const ttft, itl, tokens, n, conc = 100 * time.Millisecond, 10 * time.Millisecond, 20, 16, 4
			srv := benchtest.New(benchtest.Script{TTFT: ttft, ITL: itl}, true)
			defer srv.Close()
			res := &Result{}
			cfg := Config{Client: newClient(srv.URL, chat), Requests: wordRequests(t, n, 32, tokens),
				RequestRate: Rate(math.Inf(1)), MaxConcurrency: conc, NumWarmups: conc, Percentiles: []float64{50, 99}}
			outs := Run(context.Background(), cfg, res)
			if res.Completed != n || res.Failed != 0 || len(outs) != n {
				t.Fatalf("completed %d failed %d outputs %d, errors %q", res.Completed, res.Failed, len(outs), res.Errors)
			}
			if res.TotalOutputTokens != n*tokens || res.TotalInputTokens != n*32 {
				t.Fatalf("tokens in %d out %d", res.TotalInputTokens, res.TotalOutputTokens)
			}
			// The truth is what the server did (its timers overshoot a little on a busy machine):
			// its receive time and the time it flushed each chunk.
			var trueTTFT, trueITL, trueE2E, trueTPOT []float64
			var first, last time.Time
			for i := range outs {
				tm, ok := srv.Timing(idOf(i))
				if !ok || len(tm.Writes) != tokens {
					t.Fatalf("no server timing for request %d", i)
				}
				trueTTFT = append(trueTTFT, tm.Writes[0].Sub(tm.Received).Seconds())
				for k := 1; k < len(tm.Writes); k++ {
					trueITL = append(trueITL, tm.Writes[k].Sub(tm.Writes[k-1]).Seconds())
				}
				if first.IsZero() || tm.Received.Before(first) {
					first = tm.Received
				}
				if tm.Writes[tokens-1].After(last) {
					last = tm.Writes[tokens-1]
				}
				e2e := tm.Writes[tokens-1].Sub(tm.Received).Seconds()
				trueE2E = append(trueE2E, e2e)
				trueTPOT = append(trueTPOT, (e2e-trueTTFT[i])/(tokens-1))
			}
			truth := map[string]float64{}
			summarize(truth, "ttft", trueTTFT, nil)
			summarize(truth, "itl", trueITL, nil)
			summarize(truth, "e2el", trueE2E, nil)
			summarize(truth, "tpot", trueTPOT, nil)
			for _, k := range []string{"mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms", "median_tpot_ms",
				"mean_itl_ms", "median_itl_ms", "mean_e2el_ms", "median_e2el_ms"} {
				if strings.Contains(k, "ttft") || strings.Contains(k, "e2el") {
					withinLate(t, k, res.Stats[k], truth[k], 0.02, 3)
				} else {
					within(t, k, res.Stats[k], truth[k], 0.02)
				}
			}
			// And the script itself, loosely (the server's timers are the only slack).
			within(t, "mean TTFT vs script", res.Stats["mean_ttft_ms"], ms(ttft), 0.20)
			within(t, "mean ITL vs script", res.Stats["mean_itl_ms"], ms(itl), 0.20)
			// The run lasts from the first request's arrival to the last token the server sent.
			wantDur := last.Sub(first).Seconds()
			within(t, "duration s", res.Duration, wantDur, 0.02)
			within(t, "request throughput", res.RequestThroughput, n/wantDur, 0.02)
			within(t, "output throughput", res.OutputThroughput, n*tokens/wantDur, 0.02)
			within(t, "total token throughput", res.TotalTokenThroughput, n*(tokens+32)/wantDur, 0.02)
			if res.MaxConcurrentRequests != conc {
				t.Errorf("peak concurrency %d, want %d", res.MaxConcurrentRequests, conc)
			}
		})
	}
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

func idOf(i int) string { return "bench-" + itoa(i) }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestErrorsCounted: connection refused, 4xx/5xx, malformed SSE and streams cut before [DONE]
// are failed requests with their error text, never a crash or a hang.
func TestErrorsCounted(t *testing.T) {
	scripts := []benchtest.Script{
		{Status: 500},
		{Status: 404},
		{Malformed: true, Tokens: 5},
		{CutAfter: 3, Tokens: 5},
		{CutAfter: 3, Tokens: 5, Abort: true},
		{Tokens: 5},
	}
	srv := benchtest.NewFunc(func(_ int64, r *http.Request) benchtest.Script {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.Header.Get("X-Request-Id"), "bench-"))
		return scripts[i%len(scripts)]
	}, false)
	defer srv.Close()
	res := &Result{}
	cfg := Config{Client: newClient(srv.URL, false), Requests: wordRequests(t, len(scripts), 4, 5),
		RequestRate: Rate(math.Inf(1)), MaxConcurrency: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	Run(ctx, cfg, res)
	if res.Completed != 1 || res.Failed != 5 {
		t.Fatalf("completed %d failed %d: %q", res.Completed, res.Failed, res.Errors)
	}
	want := []string{"HTTP 500", "HTTP 404", "malformed chunk", "before [DONE]", "EOF", ""}
	for i, w := range want {
		if w == "" && res.Errors[i] != "" || !strings.Contains(res.Errors[i], w) {
			t.Errorf("request %d: error %q, want it to mention %q", i, res.Errors[i], w)
		}
	}
	if len(res.FailureReasons) != 5 || res.FailureReasons[0] != (FailureReason{1, "HTTP 500: scripted failure 500"}) {
		t.Errorf("failure reasons %+v", res.FailureReasons)
	}

	// Connection refused: a closed server's address.
	dead := benchtest.New(benchtest.Script{}, false)
	url := dead.URL
	dead.Close()
	res = &Result{}
	cfg.Client = newClient(url, false)
	Run(ctx, cfg, res)
	if res.Completed != 0 || res.Failed != len(scripts) || !strings.Contains(res.Errors[0], "refused") {
		t.Fatalf("completed %d failed %d: %q", res.Completed, res.Failed, res.Errors)
	}
}

// TestInterrupt: cancelling the context mid-run stops sending, cancels in-flight requests and
// still yields a result of what finished.
func TestInterrupt(t *testing.T) {
	srv := benchtest.New(benchtest.Script{TTFT: 5 * time.Millisecond, ITL: 5 * time.Millisecond, Tokens: 10}, false)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int64
	res := &Result{}
	cfg := Config{Client: newClient(srv.URL, false), Requests: wordRequests(t, 1000, 4, 10),
		RequestRate: 200, MaxConcurrency: 8, Progress: func() {
			if done.Add(1) == 20 {
				cancel()
			}
		}}
	start := time.Now()
	outs := Run(ctx, cfg, res)
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("interrupted run took %v", el)
	}
	if !res.Interrupted || res.Completed < 19 || len(outs) >= 100 {
		t.Fatalf("interrupted %v completed %d failed %d sent %d", res.Interrupted, res.Completed, res.Failed, len(outs))
	}
	for _, e := range res.Errors {
		if e != "" && !strings.Contains(e, "interrupted") {
			t.Errorf("error %q", e)
		}
	}
}
