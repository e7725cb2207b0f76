// This file implements a sequence: one request's prompt and output token ids, its status in
// the scheduler's state machine, and the bookkeeping the scheduler keeps for it.
//
//	waiting --admitted--> running --finish--> finished_{stopped,length,aborted}
//	running --blocks ran out, chosen as victim--> preempted (blocks freed) --admitted--> running
//	waiting / preempted --Abort--> finished_aborted

package engine

import "fmt"

// SeqID names a sequence (the request id); unique among live sequences.
type SeqID int64

// Status is where a sequence is in its life.
type Status int

const (
	StatusWaiting         Status = iota // queued, never scheduled
	StatusRunning                       // holds blocks, scheduled every step until done
	StatusPreempted                     // blocks taken back; queued to recompute from scratch
	StatusFinishedStopped               // a stop token id, or Finish for a stop string
	StatusFinishedLength                // max tokens or the model's length limit
	StatusFinishedAborted               // Abort
)

var statusNames = [...]string{"waiting", "running", "preempted", "finished_stopped", "finished_length", "finished_aborted"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// IsFinished reports whether s is one of the finished states.
func (s Status) IsFinished() bool { return s >= StatusFinishedStopped }

// SeqRequest is what the scheduler is asked to run (the engine's Request in token ids). Time
// is logical: ArrivalTime is whatever unit the caller uses (nanoseconds of its own clock, a
// step count); only its order matters.
type SeqRequest struct {
	ID           SeqID
	Prompt       []int // token ids, at least one
	MaxTokens    int   // output tokens at most; 0 = until the model's length limit
	StopTokenIDs []int // sampled ids that end the sequence (EOS included by the caller); kept in the output
	Priority     int   // priority policy: lower runs first
	ArrivalTime  int64 // FCFS order and priority ties
	CacheSalt    string
	Adapter      uint32 // the run-time LoRA adapter (0: none), carried to the executor
}

// Sequence is a request under way. The scheduler owns it; callers read it.
type Sequence struct {
	SeqRequest
	Status Status
	// NumComputedTokens counts the leading tokens whose KV rows are in the cache (or will be
	// once the pending plan runs: it is advanced by Update).
	NumComputedTokens int
	// NumCachedTokens is how many prompt tokens the prefix cache supplied at the last admission.
	NumCachedTokens int
	NumPreemptions  int

	tokens    []int  // prompt followed by output
	numPrompt int    // len(Prompt)
	order     uint64 // admission order into the scheduler: the last tie-breaker
	draft     []int  // speculative tokens after tokens (SetDraft), not part of tokens until accepted
	// numNew and numDraft are Schedule's scratch: the tokens granted in the step being
	// scheduled (drafts included) and how many of them are drafts; 0 outside Schedule.
	numNew, numDraft int
}

func newSequence(r SeqRequest, order uint64) *Sequence {
	s := &Sequence{SeqRequest: r, Status: StatusWaiting, order: order, numPrompt: len(r.Prompt)}
	s.tokens = append(make([]int, 0, len(r.Prompt)+min(max(r.MaxTokens, 16), 4096)), r.Prompt...) // MaxTokens may be huge: the output grows by append past 4096
	s.Prompt = s.tokens[:len(r.Prompt):len(r.Prompt)]
	return s
}

// Tokens returns the prompt followed by the output (do not modify).
func (s *Sequence) Tokens() []int { return s.tokens }

// Output returns the generated token ids (do not modify).
func (s *Sequence) Output() []int { return s.tokens[s.numPrompt:] }

// NumTokens is len(prompt) + len(output).
func (s *Sequence) NumTokens() int { return len(s.tokens) }

// NumPromptTokens is len(prompt).
func (s *Sequence) NumPromptTokens() int { return s.numPrompt }

// NumOutputTokens is len(output).
func (s *Sequence) NumOutputTokens() int { return len(s.tokens) - s.numPrompt }

func (s *Sequence) appendToken(t int) { s.tokens = append(s.tokens, t) }
