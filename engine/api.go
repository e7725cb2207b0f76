// This file holds the types of the Engine's API: Options, Request and its Constraint and
// Forcer, the Output stream's values with their RequestMetrics, and the Stats and StepMetrics
// the engine reports (engine.go has the Engine itself).

package engine

import (
	"time"

	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/sample"
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
