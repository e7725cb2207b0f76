// Tests of the Engine on real models (stories260K F32 and a random Q8_0 model from
// testdata): many concurrent requests give each request exactly the tokens it gets alone
// (greedy and seeded sampling), preemption under a small KV budget changes nothing, prefix
// caching saves prompt compute; the request lifecycle (aborts, stops, errors, Shutdown) is in
// engine_lifecycle_test.go. No test sleeps: pauses are made with the OnStep hook, which runs
// on the step loop.
package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
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
