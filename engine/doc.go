// Package engine is the serving engine. At its core are two pure state machines: the paged
// KV-cache block manager with automatic prefix caching (blocks*.go) and the
// continuous-batching scheduler (scheduler*.go, sequence.go), in the style of vLLM V1. They
// touch no tensor, start no goroutine and read no clock: the caller drives the scheduler with
// explicit events — AddRequest, Schedule, Update, Abort, Finish — and a model runner executes
// each StepPlan: one ragged batch of prefill chunks and decode tokens whose KV rows live in
// fixed-size blocks named by per-sequence block tables.
//
// Engine (engine*.go, runner.go, output.go) is that caller: one step-loop goroutine runs the
// scheduler, executes each plan with model.ForwardBatch over a paged KV pool, samples every
// request with its own sampler, and streams tokens and text (stop strings held back) to each
// request's channel. docs/engine.md describes the machines, their invariants, the runner and
// the Engine API.
//
// Constrained decoding (constraint.go): a Request may carry a Constraint (a grammar matcher).
// In each step the runner starts goroutines that fill the constrained sequences' token masks
// (one reused buffer per request) before it calls ForwardBatch and joins them after, so the
// masks are computed while the kernel pool runs the model (StepMetrics.MaskWait is the time
// the step still waited for them). The sampler then draws only allowed tokens
// (sample.SampleMasked: disallowed tokens get -inf after bias and penalties, before greedy,
// min-p, top-k/p and the draw; logprobs stay those of the raw distribution) and the
// constraint accepts the token, in the parallel sampling phase. A constraint that is Done after its token ends the request with
// FinishStop, the token kept; one that rejects the token, panics, or allows nothing aborts
// that request alone (Output.Err), before Update, so the token is never appended. A
// constraint advances only on sampled tokens: recompute after preemption re-runs the prompt
// and the output through the model without sampling them again. Forced tokens still take a
// forward step each.
package engine
