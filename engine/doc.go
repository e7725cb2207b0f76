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
package engine
