// This file declares the engine's side of speculative decoding: a Proposer guesses the next
// few tokens of running sequences (package spec has the n-gram, draft-model and learned-head
// proposers; engine_spec.go calls them), the scheduler runs each guess with the sequence's last token as one chunk whose
// every row is verified against the target's logits (greedy match, or rejection sampling at
// temperature > 0), rejected tokens' KV slots are rolled back, and SpecStats counts drafts and
// acceptances as vLLM's spec_decode metrics do. docs/speculative.md describes the design.

package engine

import "github.com/llmcloud/llmcloud/sample"

// Proposer guesses the next tokens of sequences in decode. The step loop calls it, one call
// at a time, between steps.
type Proposer interface {
	// Propose fills reqs[i].Draft (and reqs[i].Probs when it samples) for each request; a
	// request may get no draft. An error disables nothing: that step runs without drafts.
	Propose(reqs []ProposeRequest) error
	// Forget drops what the proposer keeps for a sequence (finished, aborted or preempted).
	Forget(id SeqID)
}

// HiddenProposer is a Proposer that drafts from the target's hidden states (a learned draft
// head in the EAGLE or Medusa style): when NeedsHidden is true the engine keeps the hidden
// rows of the verified tokens and passes them in ProposeRequest.Hidden.
type HiddenProposer interface {
	Proposer
	NeedsHidden() bool
}

// ProposeRequest is one sequence's share of a Propose call.
type ProposeRequest struct {
	ID     SeqID
	Tokens []int          // prompt followed by the output so far (read only, valid during the call)
	K      int            // propose at most K tokens (K >= 1)
	Params *sample.Params // the request's sampling parameters (read only)
	// Hidden, for a HiddenProposer, is the target's final hidden state (after the output
	// norm: the vector the logits came from) at the sequence's last token whose successor is
	// known, i.e. the row that produced Tokens[len(Tokens)-1]; nil if unknown (after a
	// prefill chunk without logits, a preemption). Read only, valid during the call.
	Hidden []float32

	// Draft receives up to K proposed tokens (reuse its capacity).
	Draft []int
	// Probs, when not nil, holds one distribution over the vocabulary per draft token: the
	// q from which the proposer drew Draft[i]. nil means each draft token was chosen
	// deterministically (a point mass), as n-gram lookup and greedy drafts do. The engine
	// reads them in the next step's verification: keep them unchanged until the next
	// Propose call. Drafts beyond len(Probs) are dropped.
	Probs [][]float32
}

// SpecOptions configures speculative decoding; the zero value is off.
type SpecOptions struct {
	Proposer Proposer
	// NumTokens is k, the draft tokens per sequence and step at most (vLLM's
	// num_speculative_tokens); each sequence adapts its own k in [1, NumTokens] to its recent
	// acceptance.
	NumTokens int
	// DisableByBatchSize turns speculation off for a step when this many sequences or more
	// are running (where the batch alone keeps the cores busy); 0 = DefaultDisableByBatchSize,
	// negative = never.
	DisableByBatchSize int
}

// SpecStats counts speculative decoding, as vLLM's spec_decode metrics do.
type SpecStats struct {
	Drafts         int64   // verifications of a sequence with at least one draft token
	DraftTokens    int64   // draft tokens verified
	AcceptedTokens int64   // draft tokens accepted
	AcceptedPerPos []int64 // accepted draft tokens by position 0..NumTokens-1
}
