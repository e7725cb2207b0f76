// Tests of the Engine's request lifecycle on real models: aborts and client cancels at every
// stage free their blocks, stop strings, output merging for slow clients, Add's errors,
// Shutdown, and a stress run of adds, aborts and cancels from many goroutines (the helpers are
// in engine_test.go).
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

	"github.com/llmcloud/llmcloud/sample"
)

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
