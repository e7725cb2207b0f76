// Package spec holds the proposers of speculative decoding: they guess the next few tokens of
// running sequences, and the engine verifies every guess in one batched forward of the target
// model (greedy match, or rejection sampling at temperature > 0: sample.Sampler.Verify), so
// the output is the one without speculation. engine/spec.go is the contract (engine.Proposer,
// engine.ProposeRequest, engine.SpecOptions); docs/speculative.md describes the design.
//
// Proposers: NGram, prompt lookup (vLLM's "ngram" method: the tokens that followed an earlier
// occurrence of the context's last n tokens); a draft model of the same vocabulary, including
// the target's own lower-bit quantisation; and a learned draft head on the target's hidden
// states.
package spec
