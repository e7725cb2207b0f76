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

	"github.com/llmcloud/llmcloud/graph/exec"
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

// Options configures an Engine. Start from DefaultOptions.
type Options struct {
	// Scheduler is the scheduler's configuration. NumBlocks is replaced by the blocks that fit
	// in KVCacheBytes when that is set; MaxModelLenTokens 0 means the model's context length capped by
	// the pool (see DefaultMaxModelLen).
	Scheduler Config
	// KVCacheBytes is the memory of the paged KV pool (K and V rows in the model's
	// KVCacheDType, scales included; see model.Config.KVCacheBytesPerToken).
	// 0 keeps Scheduler.NumBlocks.
	KVCacheBytes int64
	// MaxQueuedRequests bounds the requests that must wait for a run slot: an arriving
	// request takes a free one of the Scheduler.MaxNumSeqs slots at once, so an idle engine
	// accepts MaxNumSeqs+MaxQueuedRequests in a burst. Add returns ErrQueueFull beyond it.
	// 0 = unbounded.
	MaxQueuedRequests int
	// BatchInvariant makes a request's tokens bit-identical whatever else runs with it (a
	// lone row's matmuls run on the GEMM kernels; see model.Batch.Invariant). It costs a
	// single sequence the GEMV decode path: nothing measurable on Q8_0 weights, 1.8x per
	// token on F16 (docs/engine.md).
	BatchInvariant bool
	// OutputBuffer is the capacity of each request's Output channel. When a client reads
	// slower than tokens come, deltas are merged rather than blocking the step loop.
	OutputBuffer int
	// SingleKVPool keeps one block pool and one block table per sequence for every layer even
	// when the model's layers attend under different windows (Gemma 2): nothing is released
	// before a window. Off (the default), each window's layers get their own pool
	// (kvgroups_size.go) and a windowed group's blocks per sequence stop growing past the window.
	SingleKVPool bool
	// Speculative turns on speculative decoding (engine_spec.go; zero value: off).
	Speculative SpecOptions
	// LoRA applies the run-time adapters of requests with an Adapter id (package lora's
	// Registry); nil: requests must not name one.
	LoRA exec.Adapters
	// OnStep, if set, is called by the step loop after every step (keep it quick).
	OnStep func(StepMetrics)
	// Now is the clock (nil = time.Now).
	Now func() time.Time
}

// DefaultOptions returns a complete configuration: the scheduler's defaults with the model's
// context length, batch invariance off (as in vLLM), 64-deep output channels.
func DefaultOptions() Options {
	cfg := DefaultConfig()
	cfg.MaxModelLenTokens = 0
	return Options{Scheduler: cfg, OutputBuffer: 64}
}

// Request is one generation request, in token ids.
type Request struct {
	ID           string // unique among live requests
	Prompt       []int
	Params       sample.Params // sampling, seed, logprobs (Params.Logprobs, Params.TopLogprobs)
	MaxTokens    int           // output tokens at most; 0 = up to the maximum model length
	Stop         []string      // stop strings: the text ends before the first match
	StopTokenIDs []int         // ids that end generation (besides EOS; kept in TokenIDs, not in Text)
	IgnoreEOS    bool          // keep going past the tokenizer's end-of-generation ids
	Priority     int           // PolicyPriority: lower runs first
	CacheSalt    string        // prefix-cache isolation: only equal salts share blocks
	// Adapter is the run-time LoRA adapter's id in Options.LoRA (0: the base model). It is part
	// of the prefix-cache key: blocks computed under one adapter never serve another.
	Adapter uint32
	// ImportKV, if set, holds the KV rows of the prompt's leading full blocks computed by
	// another engine of the same model (its ExportKV, in KVLayout's layout): admission installs
	// them in the prefix cache, so the prompt's prefill starts after them (kvtransfer.go).
	// Blocks that cannot be installed are computed as usual.
	ImportKV [][]byte
	// HoldKV keeps a copy of the prompt's KV blocks when the request finishes, for the next
	// ExportKV of the same prompt (a prefill replica's request; kvtransfer_hold.go).
	HoldKV bool
	// Constraint, if set, limits every sampled token to those it allows (structured output);
	// the request ends with FinishStop when it is Done, and with FinishAbort and Err when it
	// fails (rejects the token, panics, allows nothing). One per request (it holds state); the
	// engine calls it from goroutines of its own, one call at a time, until the final Output.
	Constraint Constraint
}

// Constraint is a grammar's view of one sequence (grammar.Matcher implements it): the tokens
// allowed next, advanced by each sampled token.
type Constraint interface {
	// FillMask sets bit i of mask for every token i allowed next and clears the others.
	FillMask(mask []uint64)
	// Accept advances past a sampled token (an error if it was not allowed).
	Accept(tok int) error
	// Rollback undoes the last n Accepts.
	Rollback(n int)
	// Done reports that the output is complete and nothing may follow.
	Done() bool
}

// Forcer is an optional interface of a Constraint that knows when the grammar leaves only one
// way forward (jump forward). After each sampled token is accepted, the engine calls Forced:
// the tokens returned must follow, and the constraint has ALREADY advanced past them (Done and
// FillMask answer for the state after them; Rollback counts them as accepted tokens). The
// engine appends them to the output without sampling (streamed, counted, subject to MaxTokens,
// the model length, stop ids and stop strings, and truncated there); the next forward step
// computes them all at once. Their Logprobs entries carry the token with logprob 0 and no Top.
type Forcer interface {
	Forced() []int
}

// Finish reasons, as the OpenAI API and vLLM name them.
const (
	FinishStop   = "stop"   // EOS, a stop token id or a stop string
	FinishLength = "length" // MaxTokens or the maximum model length
	FinishAbort  = "abort"  // Abort, a cancelled context, Shutdown, or an engine error (Err)
)

// Output is one update of a request's stream: what is new since the previous Output. The last
// Output of a stream has Finished set; then the channel is closed.
type Output struct {
	ID       string
	TokenIDs []int           // newly sampled token ids (a stop token id included)
	Text     string          // newly final text (partial UTF-8 and possible stop-string starts held back)
	Logprobs []sample.Result // one per new token when Params.Logprobs or TopLogprobs ask
	Finished bool
	// FinishReason is set on the last Output: FinishStop, FinishLength or FinishAbort.
	FinishReason string
	Err          error // why an engine error aborted the request

	PromptTokens int // prompt length
	OutputTokens int // tokens generated so far
	CachedTokens int // prompt tokens the prefix cache supplied at admission
	Metrics      RequestMetrics
}

// RequestMetrics are a request's timestamps (zero until reached).
type RequestMetrics struct {
	Arrival        time.Time // Add
	FirstScheduled time.Time // first step that ran any of its tokens
	FirstToken     time.Time // its first token was sampled
	LastToken      time.Time
	Finished       time.Time
	Preemptions    int
}

// QueueTime is the wait from arrival to the first scheduled step.
func (m RequestMetrics) QueueTime() time.Duration { return since(m.Arrival, m.FirstScheduled) }

// TTFT is the time from arrival to the first token.
func (m RequestMetrics) TTFT() time.Duration { return since(m.Arrival, m.FirstToken) }

// PrefillTime is from the first scheduled step to the first token.
func (m RequestMetrics) PrefillTime() time.Duration { return since(m.FirstScheduled, m.FirstToken) }

// DecodeTime is from the first token to the last.
func (m RequestMetrics) DecodeTime() time.Duration { return since(m.FirstToken, m.LastToken) }

func since(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return b.Sub(a)
}

// Stats is a snapshot of the engine, taken by the step loop after every step.
type Stats struct {
	Running, Waiting      int     // sequences in the scheduler
	NumBlocks, FreeBlocks int     // KV pool blocks (summed over KV groups); free includes cached blocks nobody holds
	KVUsage               float64 // fraction of the KV memory in use (every group's blocks weighed by their bytes)
	PrefixQueryTokens     int64   // prompt tokens looked up in the prefix cache
	PrefixHitTokens       int64   // of which found
	Preemptions           int64
	PromptTokens          int64 // prompt tokens of admitted requests
	PrefillTokens         int64 // prompt (and recompute) tokens actually run through the model
	GenerationTokens      int64 // tokens sampled
	Steps                 int64
	BatchedTokens         int64 // tokens over all steps
	LastStepTokens        int
	Finished, Aborted     int64     // requests
	Spec                  SpecStats // speculative decoding (zero when off)
	// ExpertLoads of a mixture-of-experts model: per layer, the rows (tokens run through the
	// model) routed to each expert since the engine started (nil for a dense model). A
	// snapshot: not modified after it is published.
	ExpertLoads map[int][]uint64
}

// StepMetrics describes one step for the OnStep hook.
type StepMetrics struct {
	Step          int64
	NumSeqs       int // sequences in the batch
	NumTokens     int // rows of the batch
	PrefillTokens int // rows belonging to prompt chunks
	DecodeSeqs    int // one-token decode entries
	Preempted     int
	Start         time.Time
	Forward       time.Duration // model forward pass
	Sample        time.Duration // sampling (constraints accepting the sampled tokens included)
	// MaskWait is how long the step waited after the forward for constrained sequences' masks
	// (filled while the forward runs): 0 when the masks cost no wall time.
	MaskWait    time.Duration
	Constrained int           // sequences sampled under a Constraint's mask
	DraftTokens int           // draft tokens verified
	Propose     time.Duration // the Proposer's call after the step
	Total       time.Duration // the whole step, bookkeeping and output included
	KVUsage     float64
	Running     int
	Waiting     int
	// Plan is the step's plan as the scheduler made it (which sequences ran, how many tokens
	// each, what was preempted): valid during the OnStep call only, not to be modified. The
	// capacity simulator's test compares it with the simulated scheduler's (package sim).
	Plan *StepPlan
}

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
