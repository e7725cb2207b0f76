// Tests of admission: a burst into an idle engine fills the free run slots and then the queue;
// once the run slots are taken, exactly MaxQueuedRequests more are accepted.

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// pauseOnStep makes the step loop stop in OnStep at the first step for which cond holds,
// until release is closed; paused is closed when it stops. No request finishes meanwhile.
func pauseOnStep(t *testing.T, o *Options, cond func(StepMetrics) bool) (paused, release chan struct{}) {
	paused, release = make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { // before the engine's Shutdown, so a failed test does not hang it
		select {
		case <-release:
		default:
			close(release)
		}
	})
	done := false
	o.OnStep = func(m StepMetrics) {
		if !done && cond(m) {
			done = true
			close(paused)
			<-release
		}
	}
	return paused, release
}

// A burst of 200 into an idle engine with 64 run slots and a queue of 60: 64 take the slots,
// 60 wait, 76 are refused, whatever the step loop does meanwhile (it holds after its first
// step, so no slot is freed by a finished request).
func TestAdmissionBurst(t *testing.T) {
	const burst, seqs, queue, maxTok = 200, 64, 60, 8
	b := openBundle(t, testModels[0].path)
	var paused, release chan struct{}
	e := newEngine(t, b, func(o *Options) {
		o.Scheduler.MaxNumSeqs = seqs
		o.MaxQueuedRequests = queue
		paused, release = pauseOnStep(t, o, func(StepMetrics) bool { return true })
	})
	var mu sync.Mutex
	var chans []<-chan Output
	refused := 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ch, err := e.Add(context.Background(), Request{ID: fmt.Sprint(i), Prompt: []int{1, 2 + i%500, 401},
				MaxTokens: maxTok, IgnoreEOS: true})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrQueueFull):
				refused++
			case err != nil:
				t.Errorf("request %d: %v", i, err)
			default:
				chans = append(chans, ch)
			}
		}()
	}
	close(start)
	wg.Wait()
	<-paused // the first Add woke the loop: it has stepped once and holds
	t.Logf("accepted %d, refused %d", len(chans), refused)
	if len(chans) != seqs+queue || refused != burst-seqs-queue {
		t.Errorf("accepted %d and refused %d of %d, want %d and %d", len(chans), refused, burst, seqs+queue, burst-seqs-queue)
	}
	close(release)
	for _, ch := range chans {
		if r := collect(ch); r.final.FinishReason != FinishLength || len(r.tokens) != maxTok || r.final.Err != nil {
			t.Errorf("got %v (err %v)", r, r.final.Err)
		}
	}
	if st := e.Stats(); st.Finished != int64(len(chans)) {
		t.Errorf("%d finished, want %d", st.Finished, len(chans))
	}
}

// With every run slot held by a running request, the queue limit is exactly
// MaxQueuedRequests.
func TestAdmissionQueueWhenSlotsFull(t *testing.T) {
	const seqs, queue, maxTok = 4, 3, 6
	b := openBundle(t, testModels[0].path)
	var paused, release chan struct{}
	// The loop holds after its first step until all seqs requests are in, so none of them can
	// finish before the others run (on a loaded machine the test once waited forever for a
	// step with all seqs running).
	added := make(chan struct{})
	var addedOnce sync.Once
	closeAdded := func() { addedOnce.Do(func() { close(added) }) }
	e := newEngine(t, b, func(o *Options) {
		o.Scheduler.MaxNumSeqs = seqs
		o.MaxQueuedRequests = queue
		paused, release = pauseOnStep(t, o, func(m StepMetrics) bool { return m.Running == seqs })
		inner := o.OnStep
		o.OnStep = func(m StepMetrics) { <-added; inner(m) }
	})
	t.Cleanup(closeAdded) // registered after the engine's Shutdown, so it runs first
	add := func(i int) (<-chan Output, error) {
		return e.Add(context.Background(), Request{ID: fmt.Sprint(i), Prompt: []int{1, 2 + i%500, 401},
			MaxTokens: maxTok, IgnoreEOS: true})
	}
	var chans []<-chan Output
	for i := range seqs {
		ch, err := add(i)
		if err != nil {
			t.Fatalf("request %d into a free slot: %v", i, err)
		}
		chans = append(chans, ch)
	}
	closeAdded()
	<-paused // all seqs run (StepMetrics.Running); the loop holds
	for i := seqs; i < seqs+queue; i++ {
		ch, err := add(i)
		if err != nil {
			t.Fatalf("queued request %d: %v", i, err)
		}
		chans = append(chans, ch)
	}
	for i := seqs + queue; i < seqs+queue+3; i++ {
		if _, err := add(i); !errors.Is(err, ErrQueueFull) {
			t.Errorf("request %d beyond the queue: %v, want ErrQueueFull", i, err)
		}
	}
	close(release)
	for _, ch := range chans {
		if r := collect(ch); r.final.FinishReason != FinishLength || len(r.tokens) != maxTok {
			t.Errorf("got %v", r)
		}
	}
	// Everything finished: the slots are free again, so a burst of seqs+queue is accepted.
	for i := 100; i < 100+seqs+queue; i++ {
		ch, err := add(i)
		if err != nil {
			t.Fatalf("request %d after the others finished: %v", i, err)
		}
		defer collect(ch)
	}
}

// A request asking for the largest int of tokens runs until the maximum model length (it
// crashed the engine once: the sequence preallocated MaxTokens slots).
func TestHugeMaxTokens(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	e := newEngine(t, b, nil)
	ch, err := e.Add(context.Background(), Request{ID: "huge", Prompt: []int{1, 2, 3}, MaxTokens: int(^uint(0) >> 1), IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	var last Output
	n := 0
	for o := range ch {
		n += len(o.TokenIDs)
		last = o
	}
	if last.FinishReason != FinishLength || n == 0 {
		t.Fatalf("finish %q after %d tokens, want length", last.FinishReason, n)
	}
}
