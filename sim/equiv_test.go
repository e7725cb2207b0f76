package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/loader"
)

// stepRec is one step's decisions: which sequences ran, from where, how many tokens, and what
// was preempted.
type stepRec struct {
	Step      int64
	Seqs      []string // "id:start+n" with p for a prefill entry
	Preempted []engine.SeqID
}

func recordPlan(p *engine.StepPlan) stepRec {
	r := stepRec{Step: p.Step, Preempted: slices.Clone(p.Preempted)}
	for _, ss := range p.Seqs {
		kind := "d"
		switch {
		case ss.Prefill && ss.NeedsLogits:
			kind = "p" // a prompt's last chunk
		case ss.Prefill:
			kind = "c" // a chunk with more to follow
		}
		r.Seqs = append(r.Seqs, fmt.Sprintf("%d:%d+%d%s", ss.ID, ss.StartPos, len(ss.Tokens), kind))
	}
	return r
}

// equivTrace is a workload in engine steps: request i is added after step Arrive[i]-1 (request
// 0 before the first step). Prompts share prefixes (prefix caching), exceed the step budget
// (chunked prefill) and outgrow the small KV pool together (preemption).
type equivReq struct {
	arrive int64
	prompt []int
	out    int
}

func equivTrace() []equivReq {
	rng := rand.New(rand.NewPCG(7, 7))
	prefix := [2][]int{}
	for g := range prefix {
		for range 48 {
			prefix[g] = append(prefix[g], 1+rng.IntN(4000))
		}
	}
	reqs := []equivReq{{arrive: 0, prompt: append(slices.Clone(prefix[0]), 5, 6, 7), out: 150}}
	at := int64(1)
	for i := 1; i < 14; i++ {
		p := slices.Clone(prefix[i%2])
		for range 5 + rng.IntN(90) {
			p = append(p, 1+rng.IntN(4000))
		}
		reqs = append(reqs, equivReq{arrive: at, prompt: p, out: 20 + rng.IntN(80)})
		at += int64(1 + rng.IntN(8))
	}
	return reqs
}

var equivConfig = engine.Config{NumBlocks: 26, BlockSizeTokens: 16, PrefixCaching: true, MaxNumBatchedTokens: 64,
	MaxNumSeqs: 5, ChunkedPrefill: true, MaxModelLenTokens: 256}

// TestSimulatorSchedulesAsEngine runs one trace through the real engine (the built-in default
// model, the engine's step loop and runner) and through the simulator, and compares every
// step's decisions: the same sequences, positions, token counts and preemptions, step by step.
func TestSimulatorSchedulesAsEngine(t *testing.T) {
	trace := equivTrace()
	real := runEngineTrace(t, trace)

	// The simulator: every step takes 1 ms, so "after step k-1" is just before k ms.
	prof := &Profile{Engine: FromEngine(equivConfig)}
	prof.SetCoefficients(Coefficients{1e-3})
	reqs := make([]Request, len(trace))
	for i, r := range trace {
		reqs[i] = Request{PromptLen: int32(len(r.prompt)), Output: int32(r.out), Group: -1, IDs: r.prompt}
		if r.arrive > 0 {
			reqs[i].At = r.arrive*1e6 - 1
		}
	}
	var simulated []stepRec
	out, err := Simulate(Options{Profile: prof, Replicas: 1, OnStep: func(_ int, _ int64, p *engine.StepPlan) {
		simulated = append(simulated, recordPlan(p))
	}}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range out.Errors {
		if e != "" || out.NumOut[i] != reqs[i].Output {
			t.Errorf("simulated request %d: %d tokens of %d, error %q", i, out.NumOut[i], reqs[i].Output, e)
		}
	}

	var preempted, cachedStart, chunked bool
	seen := map[int]bool{}
	for i := range max(len(real), len(simulated)) {
		if i >= len(real) || i >= len(simulated) {
			t.Fatalf("the engine ran %d steps, the simulator %d", len(real), len(simulated))
		}
		a, b := real[i], simulated[i]
		if a.Step != b.Step || !slices.Equal(a.Seqs, b.Seqs) || !slices.Equal(a.Preempted, b.Preempted) {
			t.Fatalf("step %d differs:\nengine    %+v\nsimulator %+v", i, a, b)
		}
		preempted = preempted || len(a.Preempted) > 0
		for _, s := range a.Seqs {
			var id, start, n int
			var kind string
			if _, err := fmt.Sscanf(s, "%d:%d+%d%s", &id, &start, &n, &kind); err != nil {
				t.Fatal(err)
			}
			chunked = chunked || kind == "c"
			cachedStart = cachedStart || !seen[id] && start > 0 // admitted past a cached prefix
			seen[id] = true
		}
	}
	if !preempted || !cachedStart || !chunked {
		t.Errorf("the trace did not exercise preemption (%v), prefix-cache hits (%v) and chunked prefill (%v)", preempted, cachedStart, chunked)
	}
	t.Logf("%d steps compared", len(real))
}

// runEngineTrace serves trace on a real engine and records its plans.
func runEngineTrace(t *testing.T, trace []equivReq) []stepRec {
	t.Helper()
	path, err := defaultmodel.Path()
	if err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var (
		mu    sync.Mutex
		steps []stepRec
		wg    sync.WaitGroup
		e     *engine.Engine
		next  = 1
		ready = make(chan struct{})
		errs  []error
	)
	add := func(i int) {
		r := trace[i]
		ch, err := e.Add(context.Background(), engine.Request{ID: fmt.Sprint(i), Prompt: r.prompt, MaxTokens: r.out, IgnoreEOS: true})
		if err != nil {
			errs = append(errs, err)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for o := range ch {
				n += len(o.TokenIDs)
				if o.Finished {
					if n != r.out || o.Err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("engine request %d: %d tokens of %d, %v", i, n, r.out, o.Err))
						mu.Unlock()
					}
					return
				}
			}
		}()
	}
	opts := engine.DefaultOptions()
	opts.Scheduler = equivConfig
	opts.OnStep = func(m engine.StepMetrics) {
		<-ready
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, recordPlan(m.Plan))
		for next < len(trace) && trace[next].arrive == m.Step+1 {
			add(next)
			next++
		}
	}
	e, err = engine.New(b.Model, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	add(0)
	mu.Unlock()
	close(ready)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		added := next
		mu.Unlock()
		if added == len(trace) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, err := range errs {
		t.Error(err)
	}
	return steps
}
