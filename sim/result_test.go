package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/bench"
	"github.com/llmcloud/llmcloud/engine"
)

// testProfile is a profile of the default engine configuration with plausible coefficients.
func testProfile() *Profile {
	cfg := engine.DefaultConfig()
	cfg.MaxModelLenTokens = 2048
	p := &Profile{Version: ProfileVersion, Engine: FromEngine(cfg)}
	p.SetCoefficients(Coefficients{3e-4, 1.5e-4, 2e-7, 2e-4, 1e-6})
	return p
}

// TestFillMatchesBenchCompute: the simulator's statistics (from a weighted ITL distribution)
// equal bench.Compute's on the same requests spelled out as bench outputs.
func TestFillMatchesBenchCompute(t *testing.T) {
	reqs, err := Requests(Dataset{Name: "random", RandomInputLen: 200, RandomOutputLen: 40, RandomRangeRatio: 0.5}, 400, 30, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	reqs[7].PromptLen = 5000 // longer than the model: fails, as the server would refuse it
	out, err := Simulate(Options{Profile: testProfile(), Replicas: 2, Router: "least-load", Detailed: true}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	pcts := []float64{50, 90, 99}
	goodput := bench.Goodput{"ttft": 100, "tpot": 20}
	var got bench.Result
	out.Fill(&got, goodput, pcts)
	if got.Failed != 1 || got.Completed != len(reqs)-1 {
		t.Fatalf("completed %d failed %d", got.Completed, got.Failed)
	}

	base := time.Unix(1e9, 0)
	outs := make([]bench.Output, len(reqs))
	for i, r := range reqs {
		o := bench.Output{PromptTokens: int(r.PromptLen), Error: out.Errors[i], Start: base.Add(time.Duration(r.At))}
		if out.Errors[i] == "" {
			o.Success, o.OutputTokens = true, int(out.NumOut[i])
			o.TTFT, o.Latency = time.Duration(out.TTFT[i]), time.Duration(out.E2E[i])
			o.End = o.Start.Add(o.Latency)
			for _, g := range out.ITLs[i] {
				o.ITL = append(o.ITL, time.Duration(g))
			}
		}
		outs[i] = o
	}
	var want bench.Result
	bench.Compute(&want, outs, base, time.Duration(out.End), goodput, pcts)
	for k, w := range want.Stats {
		if g, ok := got.Stats[k]; !ok || math.Abs(g-w) > 1e-9*max(1, math.Abs(w)) {
			t.Errorf("%s = %v, bench.Compute %v", k, g, w)
		}
	}
	for _, c := range [][3]any{
		{"request_throughput", got.RequestThroughput, want.RequestThroughput},
		{"output_throughput", got.OutputThroughput, want.OutputThroughput},
		{"goodput", *got.RequestGoodput, *want.RequestGoodput},
		{"peak tok/s", got.MaxOutputTokensPerS, want.MaxOutputTokensPerS},
		{"peak concurrency", float64(got.MaxConcurrentRequests), float64(want.MaxConcurrentRequests)},
	} {
		if math.Abs(c[1].(float64)-c[2].(float64)) > 1e-9*max(1, math.Abs(c[2].(float64))) {
			t.Errorf("%s = %v, bench.Compute %v", c[0], c[1], c[2])
		}
	}
}

// TestMoreReplicasLowerLatency: the same overload on more replicas gives a lower p99 TTFT,
// and every request finishes with its output length.
func TestMoreReplicasLowerLatency(t *testing.T) {
	reqs, err := Requests(Dataset{Name: "prefix-repetition", PrefixLen: 256, SuffixLen: 128, NumPrefixes: 5, PrefixOut: 32}, 600, 60, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	p99 := map[int]float64{}
	for _, n := range []int{1, 4} {
		for _, pol := range []string{"round-robin", "least-load", "prefix", "session"} {
			out, err := Simulate(Options{Profile: testProfile(), Replicas: n, Router: pol}, reqs)
			if err != nil {
				t.Fatal(err)
			}
			var res bench.Result
			out.Fill(&res, nil, []float64{99})
			if res.Failed != 0 || res.TotalOutputTokens != 600*32 {
				t.Fatalf("%d replicas, %s: %d failed, %d tokens", n, pol, res.Failed, res.TotalOutputTokens)
			}
			if pol == "round-robin" {
				p99[n] = res.Stats["p99_ttft_ms"]
			}
			if pol == "prefix" && n == 4 && out.RouterHits["prefix_hit"] == 0 {
				t.Errorf("prefix policy: no prefix hits in %v", out.RouterHits)
			}
		}
	}
	if p99[4] >= p99[1] {
		t.Errorf("p99 TTFT %v ms on 4 replicas, %v on 1", p99[4], p99[1])
	}
}

// TestSimulateBadInput: an unknown policy and pd are errors, not panics.
func TestSimulateBadInput(t *testing.T) {
	reqs := []Request{{PromptLen: 10, Output: 2, Group: -1}}
	for _, pol := range []string{"fastest", "pd"} {
		if _, err := Simulate(Options{Profile: testProfile(), Replicas: 1, Router: pol}, reqs); err == nil {
			t.Errorf("policy %q accepted", pol)
		}
	}
	if _, err := Simulate(Options{Profile: testProfile(), Replicas: 0}, reqs); err == nil {
		t.Error("0 replicas accepted")
	}
}

// TestParallelRoundRobinSame: round-robin's parallel shards, each simulating its replicas one
// after another, give exactly what one event loop over all replicas gives (an OnStep hook
// forces the single loop). With GOMAXPROCS 1 both are the single loop.
func TestParallelRoundRobinSame(t *testing.T) {
	reqs, err := Requests(Dataset{Name: "random", RandomInputLen: 300, RandomOutputLen: 50, RandomRangeRatio: 0.5}, 3000, 150, 1, 9)
	if err != nil {
		t.Fatal(err)
	}
	par, err := Simulate(Options{Profile: testProfile(), Replicas: 7, Detailed: true}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	seq, err := Simulate(Options{Profile: testProfile(), Replicas: 7, Detailed: true, OnStep: func(int, int64, *engine.StepPlan) { steps++ }}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if int64(steps) != seq.Steps || par.Steps != seq.Steps || par.End != seq.End || par.PeakConc != seq.PeakConc ||
		par.Preemptions != seq.Preemptions || !slices.Equal(par.TokensPerS, seq.TokensPerS) {
		t.Fatalf("steps %d/%d/%d, end %d/%d, preemptions %d/%d, tokens per s %v/%v", steps, par.Steps, seq.Steps, par.End, seq.End,
			par.Preemptions, seq.Preemptions, par.TokensPerS, seq.TokensPerS)
	}
	for i := range reqs {
		if par.TTFT[i] != seq.TTFT[i] || par.E2E[i] != seq.E2E[i] || par.Replica[i] != seq.Replica[i] || par.NumOut[i] != seq.NumOut[i] ||
			!slices.Equal(par.ITLs[i], seq.ITLs[i]) {
			t.Fatalf("request %d: parallel %d/%d on %d, single loop %d/%d on %d", i, par.TTFT[i], par.E2E[i], par.Replica[i], seq.TTFT[i], seq.E2E[i], seq.Replica[i])
		}
	}
	if len(par.ITLHist) != len(seq.ITLHist) {
		t.Fatalf("ITL distributions differ: %d vs %d values", len(par.ITLHist), len(seq.ITLHist))
	}
	for g, c := range seq.ITLHist {
		if par.ITLHist[g] != c {
			t.Fatalf("ITL %d ns: %d vs %d", g, par.ITLHist[g], c)
		}
	}
}

// TestBurstFirstStep: requests that arrive at the same instant on an idle replica are all in
// its first step, as the engine's loop takes its whole inbox before it schedules.
func TestBurstFirstStep(t *testing.T) {
	reqs, err := Requests(Dataset{Name: "random", RandomInputLen: 100, RandomOutputLen: 4}, 10, math.Inf(1), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var first []int
	_, err = Simulate(Options{Profile: testProfile(), Replicas: 1, OnStep: func(_ int, _ int64, p *engine.StepPlan) {
		if first == nil {
			for _, ss := range p.Seqs {
				first = append(first, len(ss.Tokens))
			}
		}
	}}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 10 {
		t.Fatalf("the first step ran %d sequences (%v), want all 10", len(first), first)
	}
}
