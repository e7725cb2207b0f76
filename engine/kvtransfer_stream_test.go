package engine

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/synth"
)

func streamPrompt(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = (i*29 + 3) % 200
	}
	return p
}

// readStream reads s to the end.
func readStream(t *testing.T, s *KVStream) ([][]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out [][]byte
	for {
		b, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
}

// waitStreamWaiting waits until n StreamKV calls wait for a HoldKV request.
// startWaitingStream starts an export of prompt on e that waits up to 5 s for its HoldKV
// request, returns once it waits, and delivers the stream on the channel it returns.
func startWaitingStream(t *testing.T, e *Engine, prompt []int) chan *KVStream {
	t.Helper()
	got := make(chan *KVStream, 1)
	go func() {
		s, err := e.StreamKV(context.Background(), prompt, "", 0, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	waitStreamWaiting(t, e, 1)
	return got
}

func waitStreamWaiting(t *testing.T, e *Engine, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		e.mu.Lock()
		k := 0
		for _, w := range e.kvWaiting {
			k += len(w)
		}
		e.mu.Unlock()
		if k == n {
			return
		}
	}
	t.Fatalf("%d StreamKV calls are not waiting", n)
}

// TestKVStreamDuringPrefill: an export asked for before the HoldKV request exists waits for
// it, then receives the prompt's blocks step by step while the prefill is still computing the
// prompt (a 150-token prompt in 64-token chunks: the first blocks are copied before its last
// chunk runs); a second export waiting at the same time gets the finished request's copy; the
// blocks equal the cache's rows, nothing is left held, and an engine importing them continues
// to the lone engine's greedy tokens.
func TestKVStreamDuringPrefill(t *testing.T) {
	m := synthModel(t, synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128,
		Vocab: 300, CtxLen: 256, Seed: 5, Std: 0.3})
	prompt := streamPrompt(150)
	alone := kvTransferEngine(t, m, 64)
	want := runAll(t, alone, []Request{greedy("a", prompt, 12)})["a"]

	prod := kvTransferEngine(t, m, 64)
	type res struct {
		s   *KVStream
		err error
	}
	// Two exports wait for the prefill: one follows it, the other gets the request's copy
	// when it finishes (not the prefix cache's after its 5 s wait).
	got := make(chan res, 2)
	for range 2 {
		go func() {
			s, err := prod.StreamKV(context.Background(), prompt, "", 0, 5*time.Second)
			got <- res{s, err}
		}()
	}
	waitStreamWaiting(t, prod, 2)
	pr := greedy("p", prompt, 1)
	pr.HoldKV = true
	ch, err := prod.Add(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	var streamed [2][][]byte
	var early [2]int
	t0 := time.Now()
	for i := range 2 {
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.s.Close()
		streamed[i], err = readStream(t, r.s)
		if err != nil {
			t.Fatal(err)
		}
		var end time.Time
		var ok bool
		early[i], end, ok = r.s.Overlap()
		if !ok || end.IsZero() {
			t.Errorf("export %d: no prefill end (%v, %v)", i, end, ok)
		}
		if n := (len(prompt) - 1) / 16; len(streamed[i]) != n || r.s.Len() != n {
			t.Fatalf("export %d: %d blocks (announced %d), want %d", i, len(streamed[i]), r.s.Len(), n)
		}
	}
	collect(ch)
	if time.Since(t0) > 4*time.Second {
		t.Errorf("the exports took %v: one waited for its timeout", time.Since(t0))
	}
	blocks := streamed[0]
	for i := range blocks {
		if !slices.Equal(streamed[1][i], blocks[i]) {
			t.Fatalf("block %d differs between the two exports", i)
		}
	}
	if min(early[0], early[1]) != 0 || max(early[0], early[1]) == 0 || max(early[0], early[1]) == len(blocks) {
		t.Errorf("blocks copied before the prefill ended: %v of %d (want some for the follower, none for the copy)", early, len(blocks))
	}
	prod.mu.Lock()
	held, holding, waiting := len(prod.held), len(prod.holding), len(prod.kvWaiting)
	prod.mu.Unlock()
	if held+holding+waiting != 0 {
		t.Errorf("after the stream: %d copies held, %d requests followed, %d exports waiting", held, holding, waiting)
	}
	cache, err := prod.ExportKV(context.Background(), prompt, "", 0)
	if err != nil || len(cache) != len(blocks) {
		t.Fatalf("export from the cache: %d blocks, %v", len(cache), err)
	}
	for i := range cache {
		if !slices.Equal(cache[i], blocks[i]) {
			t.Fatalf("block %d: streamed rows differ from the cache's", i)
		}
	}
	cons := kvTransferEngine(t, m, 64)
	cr := greedy("c", prompt, 12)
	cr.ImportKV = blocks
	if c := runAll(t, cons, []Request{cr})["c"]; !slices.Equal(c.tokens, want.tokens) {
		t.Fatalf("through the stream %v, alone %v", c.tokens, want.tokens)
	}
}

// TestKVStreamEnds: a stream whose HoldKV request is aborted fails with ErrHoldAborted; a
// reader that closes its stream mid-way leaves no copy behind; an export whose HoldKV request
// never comes falls back to the prefix cache after the wait; a finished request's copy is
// streamed whole. No block stays referenced (the engines' leak checks at cleanup).
func TestKVStreamEnds(t *testing.T) {
	m := synthModel(t, synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128,
		Vocab: 300, CtxLen: 256, Seed: 7, Std: 0.3})
	prod := kvTransferEngine(t, m, 64)
	prompt := streamPrompt(200)

	// Aborted: the export waits for the request, whose context is done before it is added.
	got := startWaitingStream(t, prod, prompt)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pr := greedy("aborted", prompt, 1)
	pr.HoldKV = true
	ch, err := prod.Add(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	s := <-got
	if _, err := readStream(t, s); !errors.Is(err, ErrHoldAborted) {
		t.Errorf("aborted prefill: %v", err)
	}
	s.Close()
	if out := collect(ch); out.final.FinishReason != FinishAbort {
		t.Errorf("the aborted request finished with %q", out.final.FinishReason)
	}

	// Closed by its reader after one block: the request finishes, no copy is kept.
	pr = greedy("closed", prompt, 1)
	pr.HoldKV = true
	ch, err = prod.Add(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	s, err = prod.StreamKV(context.Background(), prompt, "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if out := collect(ch); out.final.FinishReason != FinishLength {
		t.Errorf("the followed request finished with %q", out.final.FinishReason)
	}
	prod.mu.Lock()
	held, holding := len(prod.held), len(prod.holding)
	prod.mu.Unlock()
	if held+holding != 0 {
		t.Errorf("after a closed stream: %d copies held, %d requests followed", held, holding)
	}

	// No HoldKV request comes: after the wait, the prefix cache's blocks (the closed stream's
	// request cached them).
	t0 := time.Now()
	s, err = prod.StreamKV(context.Background(), prompt, "", 0, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readStream(t, s)
	if err != nil || len(blocks) != (len(prompt)-1)/16 || time.Since(t0) < 50*time.Millisecond {
		t.Errorf("fallback export: %d blocks after %v, %v", len(blocks), time.Since(t0), err)
	}
	if _, _, ok := s.Overlap(); ok {
		t.Error("a prefix-cache export reports a prefill")
	}

	// A finished HoldKV request's copy.
	pr = greedy("held", prompt, 1)
	pr.HoldKV = true
	collect(mustAdd(t, prod, pr))
	s, err = prod.StreamKV(context.Background(), prompt, "", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	copyBlocks, err := readStream(t, s)
	if err != nil || len(copyBlocks) != len(blocks) {
		t.Fatalf("held copy: %d blocks, %v", len(copyBlocks), err)
	}
	if early, _, ok := s.Overlap(); early != 0 || !ok {
		t.Errorf("held copy's overlap: %d early, %v", early, ok)
	}
}

func mustAdd(t *testing.T, e *Engine, r Request) <-chan Output {
	t.Helper()
	ch, err := e.Add(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestKVStreamRefusedHold: an export waiting for a HoldKV request that Add refuses (a prompt
// over the maximum model length) ends at once with an error naming the refusal, not after its
// wait.
func TestKVStreamRefusedHold(t *testing.T) {
	m := synthModel(t, synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128,
		Vocab: 300, CtxLen: 256, Seed: 8, Std: 0.3})
	prod := kvTransferEngine(t, m, 64)
	prompt := streamPrompt(300) // MaxModelLenTokens is 256
	t0 := time.Now()
	got := startWaitingStream(t, prod, prompt)
	pr := greedy("long", prompt, 1)
	pr.HoldKV = true
	if _, err := prod.Add(context.Background(), pr); err == nil {
		t.Fatal("a prompt over the maximum model length was added")
	}
	s := <-got
	defer s.Close()
	if _, err := readStream(t, s); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("export of a refused prefill: %v", err)
	}
	if d := time.Since(t0); d > 4*time.Second {
		t.Errorf("the export ended after %v", d)
	}
}
