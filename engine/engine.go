// This file implements Engine, the serving engine's public API used by the HTTP server and
// the CLI: New starts one step-loop goroutine that owns the scheduler, the paged KV pool and
// the model runner; Add queues a request and returns its stream of Outputs; Abort (or the
// request's context) cancels it; Stats and the per-step hook report what the engine is doing;
// Shutdown drains. Callers' goroutines never touch the scheduler: Add and Abort leave events
// in an inbox that the loop applies between steps (engine_loop.go).

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/profile"
	"github.com/llmcloud/llmcloud/sample"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Errors returned by Add.
var (
	ErrQueueFull     = errors.New("engine: queue full")
	ErrPromptTooLong = errors.New("engine: prompt too long")
	ErrShutdown      = errors.New("engine: shut down")
)

// Engine serves many requests on one model with continuous batching over a paged KV cache.
type Engine struct {
	m    *model.Model
	tok  *tokenizer.Tokenizer
	opts Options
	cfg  Config // effective scheduler configuration
	eog  []int  // the tokenizer's end-of-generation ids
	// maskWords is the length of a constrained request's mask: it covers the model's and the
	// tokenizer's vocabularies.
	maskWords int
	now       func() time.Time
	sched     *Scheduler  // step loop only
	runner    *runner     // step loop only
	spec      *specEngine // nil: no speculative decoding

	mu        sync.Mutex
	inbox     []event
	live      map[string]*reqState // accepted and not finished (for Abort and duplicates)
	notStart  int                  // live requests not yet scheduled (MaxQueuedRequests)
	accepting bool
	draining  bool // Shutdown: exit when idle
	abortAll  bool // Shutdown's context ended: abort everything
	stats     Stats
	nextSeq   SeqID
	wake      chan struct{}
	done      chan struct{}

	profiler atomic.Pointer[profile.Recorder] // nil: off (profile.go)

	held      map[BlockHash]heldKV // under mu: HoldKV copies (kvtransfer_hold.go)
	heldBytes int64
	holding   map[BlockHash][]*reqState // under mu: live HoldKV requests (kvtransfer_stream.go)
	kvWaiting map[BlockHash][]*KVStream // under mu: StreamKV calls waiting for a HoldKV request
}

type eventKind int

const (
	evAdd eventKind = iota
	evAbort
	evExport // kvtransfer.go
)

type event struct {
	kind eventKind
	r    *reqState
	x    *exportReq // evExport
}

// New builds an engine for m (tok may be nil: then Outputs carry no text and no EOS is known)
// and starts its step loop.
func New(m *model.Model, tok *tokenizer.Tokenizer, opts Options) (*Engine, error) {
	cfg := opts.Scheduler
	mc := &m.Config
	per := m.KVBytesPerTokenCache()
	if opts.KVCacheBytes > 0 {
		cfg.NumBlocks = NumBlocksForBudget(opts.KVCacheBytes, cfg.BlockSizeTokens, per)
	}
	if cfg.MaxModelLenTokens == 0 {
		// The model's context length, capped by what the pool holds: a file may claim any
		// context, but it never sizes memory.
		cfg.MaxModelLenTokens = DefaultMaxModelLen(mc.CtxLen, cfg.NumBlocks, cfg.BlockSizeTokens)
	}
	if cfg.NumBlocks*cfg.BlockSizeTokens < cfg.MaxModelLenTokens {
		return nil, fmt.Errorf("engine: KV cache of %d blocks holds %d tokens (%d B/token), less than the maximum model length %d",
			cfg.NumBlocks, cfg.NumBlocks*cfg.BlockSizeTokens, per, cfg.MaxModelLenTokens)
	}
	layout := kvLayout{}
	if cfg.KVGroups = nil; !opts.SingleKVPool {
		layout = planKVGroups(m, &cfg, opts.KVCacheBytes)
	}
	sched, err := NewScheduler(cfg)
	if err != nil {
		return nil, err
	}
	spec, err := newSpecEngine(opts.Speculative, cfg)
	if err != nil {
		return nil, err
	}
	kv, err := layout.newPagedKV(m, cfg)
	if err != nil {
		return nil, err
	}
	if opts.OutputBuffer < 2 {
		opts.OutputBuffer = 64
	}
	e := &Engine{m: m, tok: tok, opts: opts, cfg: cfg, now: opts.Now, sched: sched, spec: spec,
		runner: newRunner(m, kv, opts.BatchInvariant, opts.LoRA), live: map[string]*reqState{},
		accepting: true, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if e.now == nil {
		e.now = time.Now
	}
	e.runner.b.KeepHidden = spec != nil && spec.hidden
	e.maskWords = (mc.Vocab + 63) / 64
	if tok != nil {
		e.maskWords = max(e.maskWords, (tok.VocabSize()+63)/64)
		for id := 0; id < tok.VocabSize(); id++ {
			if tok.IsEOG(id) {
				e.eog = append(e.eog, id)
			}
		}
	}
	e.stats = e.snapshot()
	go e.loop()
	return e, nil
}

// Config returns the effective scheduler configuration (NumBlocks and MaxModelLenTokens
// resolved).
func (e *Engine) Config() Config { return e.cfg }

// Add validates r and queues it. The returned channel receives the request's Outputs and is
// closed after the one with Finished set. Cancelling ctx aborts the request.
func (e *Engine) Add(ctx context.Context, r Request) (<-chan Output, error) {
	ch, err := e.add(ctx, r)
	if err != nil && r.HoldKV {
		e.refuseHold(r, err) // exports waiting for it need not wait longer
	}
	return ch, err
}

func (e *Engine) add(ctx context.Context, r Request) (<-chan Output, error) {
	if err := e.validate(r); err != nil {
		return nil, err
	}
	if err := e.validateAdapter(&r); err != nil {
		return nil, err
	}
	smp, err := sample.New(r.Params)
	if err != nil {
		return nil, fmt.Errorf("engine: request %s: %w", r.ID, err)
	}
	smp.SetPrompt(r.Prompt)
	st := &reqState{req: r, dec: newSeqSampler(smp, r.Constraint, e.maskWords), out: make(chan Output, e.opts.OutputBuffer),
		stop: newStopText(e.tok, r.Stop)}
	st.metrics.Arrival = e.now()
	e.mu.Lock()
	switch {
	case !e.accepting:
		e.mu.Unlock()
		return nil, ErrShutdown
	case e.live[r.ID] != nil:
		e.mu.Unlock()
		return nil, fmt.Errorf("engine: request id %q is already live", r.ID)
	case e.queueFull():
		waiting := e.notStart - e.freeSlots() // read under mu: the step loop updates it
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %d requests waiting for a run slot (limit %d)", ErrQueueFull, waiting, e.opts.MaxQueuedRequests)
	}
	st.seq = e.nextSeq
	e.nextSeq++
	e.live[r.ID] = st
	e.notStart++
	// Set before the loop can see st (it reads the inbox under mu); a context that is already
	// done calls Abort from its own goroutine, after the request is live.
	st.stopCtx = context.AfterFunc(ctx, func() { _ = e.Abort(r.ID) })
	if r.HoldKV {
		e.registerHold(st)
	}
	e.inbox = append(e.inbox, event{kind: evAdd, r: st})
	e.mu.Unlock()
	e.signal()
	return st.out, nil
}

// validate checks what Add can check without the loop.
func (e *Engine) validate(r Request) error {
	maxLen := e.cfg.MaxModelLenTokens
	switch {
	case r.ID == "":
		return errors.New("engine: request without an id")
	case len(r.Prompt) == 0:
		return fmt.Errorf("engine: request %s: empty prompt", r.ID)
	case len(r.Prompt) >= maxLen:
		return fmt.Errorf("%w: request %s: prompt of %d tokens is %d tokens over the maximum model length %d (which must leave room for one generated token)",
			ErrPromptTooLong, r.ID, len(r.Prompt), len(r.Prompt)-maxLen+1, maxLen)
	case !e.cfg.ChunkedPrefill && len(r.Prompt) > e.cfg.MaxNumBatchedTokens:
		return fmt.Errorf("%w: request %s: prompt of %d tokens is %d tokens over the step budget %d (chunked prefill off)",
			ErrPromptTooLong, r.ID, len(r.Prompt), len(r.Prompt)-e.cfg.MaxNumBatchedTokens, e.cfg.MaxNumBatchedTokens)
	case r.MaxTokens < 0:
		return fmt.Errorf("engine: request %s: negative max tokens %d", r.ID, r.MaxTokens)
	}
	if err := e.validateImport(r); err != nil {
		return err
	}
	vocab := e.m.Config.Vocab
	for i, t := range r.Prompt {
		if t < 0 || t >= vocab {
			return fmt.Errorf("engine: request %s: prompt token %d (index %d) outside the vocabulary [0, %d)", r.ID, t, i, vocab)
		}
	}
	for id := range r.Params.LogitBias {
		if id < 0 || id >= vocab {
			return fmt.Errorf("engine: request %s: logit bias for token %d outside the vocabulary [0, %d)", r.ID, id, vocab)
		}
	}
	return nil
}

// Abort ends a live request: its stream gets a final Output with FinishReason "abort" and its
// KV blocks are free once the current step is over.
func (e *Engine) Abort(id string) error {
	e.mu.Lock()
	st := e.live[id]
	if st == nil {
		e.mu.Unlock()
		return fmt.Errorf("engine: no live request %q", id)
	}
	e.inbox = append(e.inbox, event{kind: evAbort, r: st})
	e.mu.Unlock()
	e.signal()
	return nil
}

// Stats returns the snapshot the step loop took after its last step or event.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Shutdown stops accepting requests and lets the live ones finish; when ctx ends first, the
// rest are aborted. It returns when the step loop has exited: nil after a full drain,
// ctx.Err() if requests had to be aborted.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.accepting = false
	e.draining = true
	e.mu.Unlock()
	e.signal()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	e.abortAll = true
	e.mu.Unlock()
	e.signal()
	<-e.done
	return ctx.Err()
}

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
