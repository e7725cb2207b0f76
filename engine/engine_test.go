// Tests of the Engine on real models (stories260K F32 and a random Q8_0 model from
// testdata): many concurrent requests give each request exactly the tokens it gets alone
// (greedy and seeded sampling), preemption under a small KV budget changes nothing, prefix
// caching saves prompt compute, aborts and client cancels at every stage free their blocks,
// stop strings, output merging for slow clients, errors and Shutdown. No test sleeps: pauses
// are made with the OnStep hook, which runs on the step loop.
package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/generate"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/sample"
)

var testModels = []struct {
	name string
	path []string
}{
	{"stories260K", []string{"models", "stories260K", "stories260K.bin"}},
	{"rand3M-q8_0", []string{"models", "rand3M", "rand3M-q8_0.gguf"}},
}

func openBundle(t *testing.T, path []string) *loader.Bundle {
	t.Helper()
	b, err := loader.Open(fixture.Path(t, path...), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newEngine starts an engine whose Shutdown and leak check run at the end of the test.
func newEngine(t *testing.T, b *loader.Bundle, mod func(*Options)) *Engine {
	t.Helper()
	o := DefaultOptions()
	o.BatchInvariant = true
	o.Scheduler.MaxNumBatchedTokens = 256
	o.Scheduler.NumBlocks = 512
	if mod != nil {
		mod(&o)
	}
	e, err := New(b.Model, b.Tok, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownAndCheck(t, e) })
	return e
}

// shutdownAndCheck drains e and fails on any block still held.
func shutdownAndCheck(t *testing.T, e *Engine) {
	t.Helper()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	checkNoLeaks(t, e)
}

func checkNoLeaks(t *testing.T, e *Engine) {
	t.Helper()
	bm := e.sched.Blocks()
	if err := bm.check(); err != nil {
		t.Errorf("block manager: %v", err)
	}
	if free := bm.NumFreeBlocks(); free != e.cfg.NumBlocks {
		t.Errorf("%d of %d blocks free after the test", free, e.cfg.NumBlocks)
	}
	for g := 1; g < e.sched.NumKVGroups(); g++ {
		if err := e.sched.GroupBlocks(g).checkEmpty(); err != nil {
			t.Errorf("KV group %d: %v", g, err)
		}
	}
	if st := e.Stats(); st.FreeBlocks != st.NumBlocks || st.Running+st.Waiting != 0 {
		t.Errorf("stats after the test: %+v", st)
	}
}

// result is a whole stream, collected.
type result struct {
	tokens []int
	text   string
	final  Output
	n      int // Outputs received
	lps    []sample.Result
}

func (r result) String() string {
	return fmt.Sprintf("%s %v %q", r.final.FinishReason, r.tokens, r.text)
}

func collect(ch <-chan Output) result {
	var r result
	for o := range ch {
		r.tokens = append(r.tokens, o.TokenIDs...)
		r.text += o.Text
		r.lps = append(r.lps, o.Logprobs...)
		r.n++
		if o.Finished {
			r.final = o
		}
	}
	return r
}

// runAll adds every request at once and collects the streams.
func runAll(t *testing.T, e *Engine, reqs []Request) map[string]result {
	t.Helper()
	return collectAll(reqs, addAll(t, e, reqs))
}

func addAll(t *testing.T, e *Engine, reqs []Request) []<-chan Output {
	t.Helper()
	chans := make([]<-chan Output, len(reqs))
	for i, r := range reqs {
		ch, err := e.Add(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	return chans
}

func collectAll(reqs []Request, chans []<-chan Output) map[string]result {
	out := map[string]result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, ch := range chans {
		wg.Go(func() {
			r := collect(ch)
			mu.Lock()
			out[reqs[i].ID] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// runAlone runs each request with nothing else in the engine.
func runAlone(t *testing.T, e *Engine, reqs []Request) map[string]result {
	t.Helper()
	out := map[string]result{}
	for _, r := range reqs {
		out[r.ID] = runAll(t, e, []Request{r})[r.ID]
	}
	return out
}

// mixedRequests are n requests with prompts of 1..maxPrompt random tokens and 1..maxOut
// output tokens; every third samples with a seed, the rest are greedy.
func mixedRequests(n, vocab, maxPrompt, maxOut int, seed uint64) []Request {
	r := rand.New(rand.NewPCG(seed, 9))
	var reqs []Request
	for i := range n {
		p := make([]int, 1+r.IntN(maxPrompt))
		p[0] = 1 // BOS
		for j := 1; j < len(p); j++ {
			p[j] = 3 + r.IntN(vocab-3)
		}
		req := Request{ID: fmt.Sprintf("r%02d", i), Prompt: p, MaxTokens: 1 + r.IntN(maxOut)}
		if i%3 == 2 {
			req.Params = sample.Params{Temperature: 0.9, TopP: 0.95, TopK: 40, Seed: uint64(1000 + i)}
		}
		if i%5 == 4 {
			req.Params.Logprobs, req.Params.TopLogprobs = true, 2
		}
		reqs = append(reqs, req)
	}
	return reqs
}

func compareResults(t *testing.T, want, got map[string]result) {
	t.Helper()
	for id, w := range want {
		g := got[id]
		if fmt.Sprint(w.tokens) != fmt.Sprint(g.tokens) || w.text != g.text || w.final.FinishReason != g.final.FinishReason {
			t.Errorf("request %s:\n alone:    %v\n together: %v", id, w, g)
		}
	}
}

// TestEngineConcurrentMatchesAlone: 64 concurrent requests of mixed lengths (greedy and seeded
// sampling) each produce exactly what they produce alone.
func TestEngineConcurrentMatchesAlone(t *testing.T) {
	for _, tm := range testModels {
		t.Run(tm.name, func(t *testing.T) {
			b := openBundle(t, tm.path)
			reqs := mixedRequests(64, b.Model.Config.Vocab, 120, 40, 1)
			e := newEngine(t, b, nil)
			alone := runAlone(t, e, reqs)
			var mu sync.Mutex // OnStep runs on the step loop
			maxBatch := 0
			gate := make(chan struct{}) // the first step waits until every request is in
			e2 := newEngine(t, b, func(o *Options) {
				o.OnStep = func(m StepMetrics) {
					<-gate
					mu.Lock()
					maxBatch = max(maxBatch, m.NumSeqs)
					mu.Unlock()
				}
			})
			chans := addAll(t, e2, reqs)
			close(gate)
			together := collectAll(reqs, chans)
			compareResults(t, alone, together)
			mu.Lock()
			defer mu.Unlock()
			if maxBatch < 32 {
				t.Errorf("at most %d sequences ran together; the test wants a crowd", maxBatch)
			}
			for _, r := range reqs {
				res := together[r.ID]
				if res.final.OutputTokens != len(res.tokens) || res.final.PromptTokens != len(r.Prompt) {
					t.Errorf("%s: counts %d/%d, want %d/%d", r.ID, res.final.OutputTokens, res.final.PromptTokens, len(res.tokens), len(r.Prompt))
				}
				if r.Params.Logprobs && len(res.lps) != len(res.tokens) {
					t.Errorf("%s: %d logprobs for %d tokens", r.ID, len(res.lps), len(res.tokens))
				}
				for j, lp := range res.lps {
					if lp.ID != res.tokens[j] || len(lp.Top) != 2 || lp.Logprob > 0 {
						t.Errorf("%s: logprob %d = %+v for token %d", r.ID, j, lp, res.tokens[j])
					}
				}
				if fmt.Sprint(res.lps) != fmt.Sprint(alone[r.ID].lps) {
					t.Errorf("%s: logprobs differ alone and together\n%v\n%v", r.ID, res.lps, alone[r.ID].lps)
				}
			}
		})
	}
}

// TestEngineMatchesGenerate: greedy outputs equal the single-sequence generate.Run.
func TestEngineMatchesGenerate(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	e := newEngine(t, b, func(o *Options) { o.BatchInvariant = false }) // the default mode
	for i, prompt := range []string{"Once upon a time", "The cat", "Lily and Ben went to the park. They"} {
		ids := b.Tok.Encode(prompt, true, false)
		want, err := generate.Run(context.Background(), b.Model, b.Tok, ids, generate.Options{MaxTokens: 60}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := runAll(t, e, []Request{{ID: fmt.Sprint(i), Prompt: ids, MaxTokens: 60}})[fmt.Sprint(i)]
		toks := got.tokens
		if got.final.FinishReason == FinishStop && len(toks) > 0 && b.Tok.IsEOG(toks[len(toks)-1]) {
			toks = toks[:len(toks)-1] // generate leaves the EOS out
		}
		if fmt.Sprint(toks) != fmt.Sprint(want.IDs) || got.text != want.Text || got.final.FinishReason != want.FinishReason {
			t.Errorf("%q:\n engine   %s %v %q\n generate %s %v %q", prompt, got.final.FinishReason, toks, got.text, want.FinishReason, want.IDs, want.Text)
		}
	}
}

// TestEnginePreemption: with a KV budget far too small for all requests at once, preemption
// by recompute completes every request with the outputs of a large budget.
func TestEnginePreemption(t *testing.T) {
	for _, tm := range testModels {
		t.Run(tm.name, func(t *testing.T) {
			b := openBundle(t, tm.path)
			reqs := mixedRequests(64, b.Model.Config.Vocab, 60, 60, 2)
			big := runAll(t, newEngine(t, b, nil), reqs)
			e := newEngine(t, b, func(o *Options) {
				o.Scheduler.MaxModelLenTokens = 256
				per := KVBytesPerToken(b.Model.Config.Layers, b.Model.Config.KVHeads, b.Model.Config.HeadDim, 4)
				o.KVCacheBytes = 24 * 16 * per // 24 blocks of 16 tokens
			})
			if e.cfg.NumBlocks != 24 {
				t.Fatalf("KV budget gave %d blocks, want 24", e.cfg.NumBlocks)
			}
			small := runAll(t, e, reqs)
			compareResults(t, big, small)
			if p := e.Stats().Preemptions; p == 0 {
				t.Error("no preemptions under the small budget")
			} else {
				t.Logf("%d preemptions", p)
			}
		})
	}
}

// TestEnginePrefixCaching: 32 requests sharing a 1,024-token prefix compute at least 90% fewer
// prompt tokens with prefix caching than without.
func TestEnginePrefixCaching(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	r := rand.New(rand.NewPCG(5, 5))
	prefix := make([]int, 1024)
	for i := range prefix {
		prefix[i] = 3 + r.IntN(500)
	}
	var reqs []Request
	for i := range 32 {
		p := append([]int(nil), prefix...)
		for range 5 + i%20 {
			p = append(p, 3+r.IntN(500))
		}
		reqs = append(reqs, Request{ID: fmt.Sprint(i), Prompt: p, MaxTokens: 4, IgnoreEOS: true})
	}
	run := func(caching bool) (map[string]result, Stats) {
		e := newEngine(t, b, func(o *Options) {
			o.Scheduler.MaxModelLenTokens = 2048
			o.Scheduler.MaxNumBatchedTokens = 2048
			o.Scheduler.NumBlocks = 1024
			o.Scheduler.PrefixCaching = caching
		})
		res := runAll(t, e, reqs)
		return res, e.Stats()
	}
	off, so := run(false)
	on, sn := run(true)
	compareResults(t, off, on)
	t.Logf("prompt tokens computed: caching off %d, on %d (queries %d, hits %d)", so.PrefillTokens, sn.PrefillTokens, sn.PrefixQueryTokens, sn.PrefixHitTokens)
	if so.PromptTokens != sn.PromptTokens || so.PrefillTokens != so.PromptTokens {
		t.Errorf("prompt tokens: off %d (computed %d), on %d", so.PromptTokens, so.PrefillTokens, sn.PromptTokens)
	}
	if float64(sn.PrefillTokens) > 0.1*float64(so.PrefillTokens) {
		t.Errorf("caching computed %d prompt tokens, more than 10%% of %d", sn.PrefillTokens, so.PrefillTokens)
	}
	cached := 0
	for _, res := range on {
		cached += res.final.CachedTokens
	}
	if int64(cached) != sn.PrefixHitTokens {
		t.Errorf("requests report %d cached tokens, the block manager %d hits", cached, sn.PrefixHitTokens)
	}
}

// TestEngineAbort: aborts while waiting, mid-prefill and mid-decode, and client context
// cancels, all end their streams with "abort" and leave no block held; the other requests are
// unaffected.
func TestEngineAbort(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	long := make([]int, 300)
	for i := range long {
		long[i] = 3 + i%500
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var e *Engine
	steps := 0
	var prefillSeq SeqID
	e = newEngine(t, b, func(o *Options) {
		o.Scheduler.MaxNumBatchedTokens = 64 // the long prompt takes 5 steps
		o.Scheduler.MaxNumSeqs = 3           // the fourth request waits
		o.OnStep = func(m StepMetrics) {
			steps++
			switch steps {
			case 1:
				// The first step can start before the test has added all five requests (on a
				// loaded machine); step 2 aborts "waiting", so wait, on the loop, until all
				// are live.
				for {
					e.mu.Lock()
					n := len(e.live)
					e.mu.Unlock()
					if n == 5 {
						break
					}
					runtime.Gosched()
				}
			case 2:
				e.mu.Lock()
				prefillSeq = e.live["prefill"].seq
				e.mu.Unlock()
				if len(e.sched.Blocks().BlockTable(prefillSeq)) == 0 {
					t.Error("the long prompt holds no blocks mid-prefill")
				}
				_ = e.Abort("prefill") // mid-prefill
				_ = e.Abort("waiting")
			case 3:
				// Aborted before this step was scheduled: its blocks are free already.
				if bt := e.sched.Blocks().BlockTable(prefillSeq); len(bt) != 0 || e.sched.Sequence(prefillSeq) != nil {
					t.Errorf("one step after the abort the sequence still holds blocks %v", bt)
				}
				cancel() // "cancelled" is decoding by now
				// The context's callback calls Abort from its own goroutine: wait (on the loop,
				// so no step runs meanwhile) until the abort is in the inbox.
				for {
					e.mu.Lock()
					n := len(e.inbox)
					e.mu.Unlock()
					if n > 0 {
						break
					}
					runtime.Gosched()
				}
			case 5:
				_ = e.Abort("decode")
			}
		}
	})
	reqs := []Request{
		{ID: "prefill", Prompt: long, MaxTokens: 10},
		{ID: "cancelled", Prompt: long[:5], MaxTokens: 50, IgnoreEOS: true},
		{ID: "decode", Prompt: long[:7], MaxTokens: 50, IgnoreEOS: true},
		{ID: "waiting", Prompt: long[:9], MaxTokens: 5},
		{ID: "ok", Prompt: long[:3], MaxTokens: 5, IgnoreEOS: true},
	}
	chans := map[string]<-chan Output{}
	for _, r := range reqs {
		c := context.Background()
		if r.ID == "cancelled" {
			c = ctx
		}
		ch, err := e.Add(c, r)
		if err != nil {
			t.Fatal(err)
		}
		chans[r.ID] = ch
	}
	for id, ch := range chans {
		res := collect(ch)
		want := FinishAbort
		if id == "ok" {
			want = FinishLength
		}
		if res.final.FinishReason != want || !res.final.Finished {
			t.Errorf("%s: finish %q after %d tokens, want %q", id, res.final.FinishReason, len(res.tokens), want)
		}
		if id == "prefill" && len(res.tokens) != 0 {
			t.Errorf("prefill: aborted mid-prompt yet produced %v", res.tokens)
		}
		if id == "decode" && (len(res.tokens) == 0 || len(res.tokens) >= 50) {
			t.Errorf("decode: aborted mid-decode after %d tokens", len(res.tokens))
		}
	}
	if err := e.Abort("ok"); err == nil {
		t.Error("abort of a finished request succeeded")
	}
	if st := e.Stats(); st.Aborted != 4 || st.Finished != 1 {
		t.Errorf("stats: %d aborted, %d finished", st.Aborted, st.Finished)
	}
}

// TestEngineStopStrings: a stop string cuts the text before its first occurrence and ends the
// request with "stop"; a stop token id ends it too.
func TestEngineStopStrings(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	e := newEngine(t, b, nil)
	ids := b.Tok.Encode("Once upon a time", true, false)
	base := runAll(t, e, []Request{{ID: "a", Prompt: ids, MaxTokens: 80, IgnoreEOS: true}})["a"]
	words := strings.Fields(base.text)
	if len(words) < 8 {
		t.Fatalf("base text too short: %q", base.text)
	}
	stop := words[5] + " " + words[6]
	cut := strings.Index(base.text, stop)
	got := runAll(t, e, []Request{{ID: "b", Prompt: ids, MaxTokens: 80, IgnoreEOS: true, Stop: []string{"zzz", stop}}})["b"]
	if got.text != base.text[:cut] || got.final.FinishReason != FinishStop {
		t.Errorf("stop %q: got %q (%s), want %q", stop, got.text, got.final.FinishReason, base.text[:cut])
	}
	if len(got.tokens) >= len(base.tokens) || fmt.Sprint(got.tokens) != fmt.Sprint(base.tokens[:len(got.tokens)]) {
		t.Errorf("stop string: tokens %v not a proper prefix of %v", got.tokens, base.tokens)
	}
	tid := base.tokens[10]
	got = runAll(t, e, []Request{{ID: "c", Prompt: ids, MaxTokens: 80, IgnoreEOS: true, StopTokenIDs: []int{tid}}})["c"]
	first := 0
	for base.tokens[first] != tid {
		first++
	}
	if fmt.Sprint(got.tokens) != fmt.Sprint(base.tokens[:first+1]) || got.final.FinishReason != FinishStop {
		t.Errorf("stop token %d: got %v (%s), want %v", tid, got.tokens, got.final.FinishReason, base.tokens[:first+1])
	}
}

// TestEngineSlowClient: a client that reads nothing until its request is finished still gets
// every token (deltas merged into few Outputs), and the engine never waits for it.
func TestEngineSlowClient(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	e := newEngine(t, b, func(o *Options) { o.OutputBuffer = 2 })
	ids := b.Tok.Encode("Once upon a time", true, false)
	want := runAll(t, e, []Request{{ID: "fast", Prompt: ids, MaxTokens: 50, IgnoreEOS: true}})["fast"]
	ch, err := e.Add(context.Background(), Request{ID: "slow", Prompt: ids, MaxTokens: 50, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	// A second request runs to completion while "slow"'s channel is full.
	other := runAll(t, e, []Request{{ID: "other", Prompt: ids, MaxTokens: 50, IgnoreEOS: true}})["other"]
	got := collect(ch)
	if fmt.Sprint(got.tokens) != fmt.Sprint(want.tokens) || got.text != want.text || fmt.Sprint(other.tokens) != fmt.Sprint(want.tokens) {
		t.Errorf("slow client got %v %q, want %v %q", got.tokens, got.text, want.tokens, want.text)
	}
	if got.n > 3 && got.n >= want.n {
		t.Logf("slow client received %d Outputs (fast %d)", got.n, want.n)
	}
}

// TestEngineErrors covers Add's validation, the queue limit and Shutdown.
func TestEngineErrors(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	release := make(chan struct{})
	paused := make(chan struct{})
	first := true
	e := newEngine(t, b, func(o *Options) {
		o.MaxQueuedRequests = 1
		o.Scheduler.MaxNumSeqs = 1
		o.OnStep = func(StepMetrics) {
			if first {
				first = false
				close(paused)
				<-release
			}
		}
	})
	_, err := e.Add(context.Background(), Request{ID: "x", Prompt: make([]int, 600)})
	if !errors.Is(err, ErrPromptTooLong) || !strings.Contains(err.Error(), "89 tokens over the maximum model length 512") {
		t.Errorf("long prompt: %v", err)
	}
	for _, r := range []Request{{Prompt: []int{1}}, {ID: "e"}, {ID: "v", Prompt: []int{1, 512}}, {ID: "m", Prompt: []int{1}, MaxTokens: -1},
		{ID: "s", Prompt: []int{1}, Params: sample.Params{TopP: 2}}, {ID: "b", Prompt: []int{1}, Params: sample.Params{LogitBias: map[int]float64{9999: 1}}}} {
		if _, err := e.Add(context.Background(), r); err == nil {
			t.Errorf("request %+v accepted", r)
		}
	}
	ids := []int{1, 400, 401}
	c1, err := e.Add(context.Background(), Request{ID: "1", Prompt: ids, MaxTokens: 5, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	<-paused // "1" is running; the loop waits in OnStep
	if _, err := e.Add(context.Background(), Request{ID: "1", Prompt: ids}); err == nil {
		t.Error("duplicate live id accepted")
	}
	c2, err := e.Add(context.Background(), Request{ID: "2", Prompt: ids, MaxTokens: 5, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(context.Background(), Request{ID: "3", Prompt: ids}); !errors.Is(err, ErrQueueFull) {
		t.Errorf("third request: %v, want ErrQueueFull", err)
	}
	close(release)
	for _, c := range []<-chan Output{c1, c2} {
		if r := collect(c); r.final.FinishReason != FinishLength || len(r.tokens) != 5 {
			t.Errorf("got %v", r)
		}
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(context.Background(), Request{ID: "4", Prompt: ids}); !errors.Is(err, ErrShutdown) {
		t.Errorf("add after shutdown: %v", err)
	}
}

// TestEngineShutdownAborts: Shutdown with an expired context aborts what is still running.
func TestEngineShutdownAborts(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	var e *Engine
	ctx, cancel := context.WithCancel(context.Background())
	e = newEngine(t, b, func(o *Options) {
		o.OnStep = func(m StepMetrics) {
			if m.Step == 3 {
				cancel()
				// Hold the loop until Shutdown has given up on draining (no request can
				// finish meanwhile).
				for {
					e.mu.Lock()
					done := e.abortAll
					e.mu.Unlock()
					if done {
						break
					}
					runtime.Gosched()
				}
			}
		}
	})
	var chans []<-chan Output
	for i := range 4 {
		ch, err := e.Add(context.Background(), Request{ID: fmt.Sprint(i), Prompt: []int{1, 400 + i}, MaxTokens: 400, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	<-ctx.Done()
	if err := e.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("shutdown: %v", err)
	}
	for _, ch := range chans {
		if r := collect(ch); r.final.FinishReason != FinishAbort {
			t.Errorf("after shutdown: %v", r)
		}
	}
	checkNoLeaks(t, e)
}

// TestEngineStress adds requests from several goroutines while others abort, cancel contexts
// and read slowly: every stream ends with exactly one final Output, requests that were not
// aborted produce exactly their tokens alone, and no block leaks.
func TestEngineStress(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	reqs := mixedRequests(96, b.Model.Config.Vocab, 80, 30, 3)
	alone := runAll(t, newEngine(t, b, func(o *Options) { o.Scheduler.MaxNumSeqs = 1 }), reqs)
	e := newEngine(t, b, func(o *Options) {
		o.OutputBuffer = 3
		o.Scheduler.NumBlocks = 64 // preemptions too
		o.Scheduler.MaxModelLenTokens = 256
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	aborted := map[string]bool{}
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := w; i < len(reqs); i += 8 {
				req := reqs[i]
				ctx, cancel := context.WithCancel(context.Background())
				ch, err := e.Add(ctx, req)
				if err != nil {
					t.Error(err)
					cancel()
					continue
				}
				mode := r.IntN(6)
				wg.Go(func() {
					defer cancel()
					var res result
					finals := 0
					for o := range ch {
						res.tokens = append(res.tokens, o.TokenIDs...)
						res.text += o.Text
						if o.Finished {
							finals++
							res.final = o
						}
						switch {
						case mode == 0 && len(res.tokens) >= 2:
							cancel()
						case mode == 1 && len(res.tokens) >= 1:
							_ = e.Abort(req.ID)
						}
					}
					if finals != 1 {
						t.Errorf("%s: %d final outputs", req.ID, finals)
					}
					if res.final.FinishReason == FinishAbort {
						mu.Lock()
						aborted[req.ID] = true
						mu.Unlock()
						return
					}
					if want := alone[req.ID]; fmt.Sprint(want.tokens) != fmt.Sprint(res.tokens) || want.text != res.text {
						t.Errorf("%s (mode %d): %v, alone %v", req.ID, mode, res, want)
					}
				})
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d aborted; %d preemptions", len(aborted), len(reqs), e.Stats().Preemptions)
}
