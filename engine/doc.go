// Package engine holds the serving engine's pure state machines: the paged KV-cache block
// manager with automatic prefix caching (blocks*.go) and the continuous-batching scheduler
// (scheduler*.go, sequence.go), in the style of vLLM V1.
//
// Nothing here touches a tensor, starts a goroutine or reads a clock. The caller drives the
// scheduler with explicit events — AddRequest, Schedule, Update, Abort, Finish — and a model
// runner executes each StepPlan: one ragged batch of prefill chunks and decode tokens whose
// KV rows live in fixed-size blocks named by per-sequence block tables. docs/engine.md
// describes both machines, their invariants and the runner contract.
package engine
