// This file implements the scheduler's configuration and its event handlers outside the step:
// AddRequest, Abort and Finish, the waiting queue (FCFS or priority order) and preemption by
// recompute. The step itself — Schedule and Update — is in scheduler_step.go and
// scheduler_update.go.

package engine

import (
	"errors"
	"fmt"
	"slices"
)

// Policy orders the waiting queue and picks preemption victims.
type Policy int

const (
	// PolicyFCFS admits in arrival order; the victim is the latest-admitted running sequence.
	PolicyFCFS Policy = iota
	// PolicyPriority admits the lowest Priority value first (then arrival); the victim is the
	// running sequence with the highest Priority value (then the latest arrival).
	PolicyPriority
)

func (p Policy) String() string {
	if p == PolicyPriority {
		return "priority"
	}
	return "fcfs"
}

// Config is everything the scheduler and its block manager need. Start from DefaultConfig.
type Config struct {
	NumBlocks           int  // KV-cache size in blocks (see NumBlocksForBudget)
	BlockSizeTokens     int  // token slots per block
	PrefixCaching       bool // automatic prefix caching
	MaxNumBatchedTokens int  // token budget of one step
	MaxNumSeqs          int  // running sequences at most
	ChunkedPrefill      bool // split prompts across steps; off: a prompt must fit one step whole
	Policy              Policy
	MaxModelLenTokens   int // prompt + output at most (<= NumBlocks*BlockSizeTokens)
	// KVGroups, when set, gives each KV group of the model (layers under one window,
	// kvgroups.go) its own pool and each sequence one block table per group; nil: one group
	// of NumBlocks blocks without a window.
	KVGroups []KVGroup
}

// DefaultConfig returns a complete configuration (vLLM's defaults where they apply).
func DefaultConfig() Config {
	return Config{
		NumBlocks:           1024,
		BlockSizeTokens:     16,
		PrefixCaching:       true,
		MaxNumBatchedTokens: 2048,
		MaxNumSeqs:          256,
		ChunkedPrefill:      true,
		Policy:              PolicyFCFS,
		MaxModelLenTokens:   4096,
	}
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	switch {
	case c.NumBlocks <= 0:
		return errors.New("engine: NumBlocks must be positive")
	case c.BlockSizeTokens <= 0:
		return errors.New("engine: BlockSizeTokens must be positive")
	case c.MaxNumBatchedTokens <= 0:
		return errors.New("engine: MaxNumBatchedTokens must be positive")
	case c.MaxNumSeqs <= 0:
		return errors.New("engine: MaxNumSeqs must be positive")
	case c.MaxModelLenTokens <= 1:
		return errors.New("engine: MaxModelLenTokens must be at least 2")
	case c.MaxModelLenTokens > c.NumBlocks*c.BlockSizeTokens:
		return fmt.Errorf("engine: MaxModelLenTokens %d exceeds the KV cache (%d blocks x %d tokens)",
			c.MaxModelLenTokens, c.NumBlocks, c.BlockSizeTokens)
	case c.Policy != PolicyFCFS && c.Policy != PolicyPriority:
		return fmt.Errorf("engine: unknown policy %d", c.Policy)
	}
	return c.validateGroups()
}

// SchedulerStats counts scheduler events since creation.
type SchedulerStats struct {
	Steps       int64
	Preemptions int64
	Finished    int64
	Aborted     int64
}

// Scheduler is the continuous-batching state machine. It is not safe for concurrent use: one
// owner calls AddRequest / Abort / Finish at any time and alternates Schedule and Update.
type Scheduler struct {
	cfg      Config
	blocks   *BlockManager       // group 0's
	groups   []*BlockManager     // every KV group's (groups[0] == blocks)
	computed [][]BlockID         // computedBlocks' result buffer
	seqs     map[SeqID]*Sequence // live (unfinished) sequences
	waiting  []*Sequence         // FCFS: queue order; priority: unordered, picked by key
	running  []*Sequence         // admission order
	pending  *StepPlan           // the plan returned by Schedule and not yet passed to Update
	// The step's reused buffers: the plan, its token ids and block tables (scheduler_step.go),
	// the planned sequences (planSeqs[i] runs plan.Seqs[i]) and Update's outputs.
	plan     StepPlan
	tokBuf   []int
	tabBuf   []BlockID
	grpBuf   [][]BlockID
	planSeqs []*Sequence
	outBuf   []StepOutput
	order    uint64
	stats    SchedulerStats
}

// NewScheduler validates cfg and returns an empty scheduler with its own block manager.
func NewScheduler(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg, seqs: map[SeqID]*Sequence{}}
	for _, nb := range cfg.GroupBlocks() {
		s.groups = append(s.groups, NewBlockManager(nb, cfg.BlockSizeTokens, cfg.PrefixCaching))
	}
	s.blocks = s.groups[0]
	return s, nil
}

// Config returns the configuration.
func (s *Scheduler) Config() Config { return s.cfg }

// Blocks returns the block manager (for inspection; the scheduler drives it).
func (s *Scheduler) Blocks() *BlockManager { return s.blocks }

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() SchedulerStats { return s.stats }

// Sequence returns the live sequence id, or nil.
func (s *Scheduler) Sequence(id SeqID) *Sequence { return s.seqs[id] }

// NumWaiting counts waiting and preempted sequences.
func (s *Scheduler) NumWaiting() int { return len(s.waiting) }

// NumRunning counts running sequences.
func (s *Scheduler) NumRunning() int { return len(s.running) }

// HasUnfinished reports whether any sequence is waiting or running.
func (s *Scheduler) HasUnfinished() bool { return len(s.seqs) > 0 }

// AddRequest queues a request. It fails for a duplicate live id, an empty prompt, a prompt
// that leaves no room to generate under MaxModelLenTokens, or (chunked prefill off) a prompt
// longer than the step budget.
func (s *Scheduler) AddRequest(r SeqRequest) (*Sequence, error) {
	switch {
	case s.seqs[r.ID] != nil:
		return nil, fmt.Errorf("engine: request %d already exists", r.ID)
	case len(r.Prompt) == 0:
		return nil, fmt.Errorf("engine: request %d has an empty prompt", r.ID)
	case len(r.Prompt) >= s.cfg.MaxModelLenTokens:
		return nil, fmt.Errorf("engine: request %d: prompt of %d tokens, model length %d", r.ID, len(r.Prompt), s.cfg.MaxModelLenTokens)
	case !s.cfg.ChunkedPrefill && len(r.Prompt) > s.cfg.MaxNumBatchedTokens:
		return nil, fmt.Errorf("engine: request %d: prompt of %d tokens exceeds the step budget %d (chunked prefill off)", r.ID, len(r.Prompt), s.cfg.MaxNumBatchedTokens)
	case r.MaxTokens < 0:
		return nil, fmt.Errorf("engine: request %d: negative MaxTokens", r.ID)
	}
	seq := newSequence(r, s.order)
	s.order++
	s.seqs[r.ID] = seq
	s.waiting = append(s.waiting, seq)
	return seq, nil
}

// Abort ends a waiting, preempted or running sequence (status finished_aborted, blocks freed).
// If it is in the pending plan, Update skips it.
func (s *Scheduler) Abort(id SeqID) error { return s.Finish(id, StatusFinishedAborted) }

// Finish ends a live sequence with a finished status — for example finished_stopped when the
// caller's detokenizer matched a stop string — and frees its blocks.
func (s *Scheduler) Finish(id SeqID, status Status) error {
	seq := s.seqs[id]
	if seq == nil {
		return fmt.Errorf("engine: no live sequence %d", id)
	}
	if !status.IsFinished() {
		return fmt.Errorf("engine: Finish with non-final status %v", status)
	}
	s.finish(seq, status)
	return nil
}

func (s *Scheduler) finish(seq *Sequence, status Status) {
	switch seq.Status {
	case StatusRunning:
		s.running = removeSeq(s.running, seq)
	case StatusWaiting, StatusPreempted:
		s.waiting = removeSeq(s.waiting, seq)
	}
	s.freeBlocks(seq.ID)
	seq.Status = status
	delete(s.seqs, seq.ID)
	if status == StatusFinishedAborted {
		s.stats.Aborted++
	} else {
		s.stats.Finished++
	}
}

func removeSeq(list []*Sequence, seq *Sequence) []*Sequence {
	if i := slices.Index(list, seq); i >= 0 {
		return slices.Delete(list, i, i+1)
	}
	return list
}

// nextWaiting is the index in s.waiting of the sequence to admit next.
func (s *Scheduler) nextWaiting() int {
	if s.cfg.Policy == PolicyFCFS {
		return 0
	}
	best := 0
	for i, q := range s.waiting {
		if s.before(q, s.waiting[best]) {
			best = i
		}
	}
	return best
}

// before reports whether a ranks ahead of b (runs first, is preempted last).
func (s *Scheduler) before(a, b *Sequence) bool {
	if s.cfg.Policy == PolicyPriority && a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if a.ArrivalTime != b.ArrivalTime {
		return a.ArrivalTime < b.ArrivalTime
	}
	return a.order < b.order
}

// victim is the index in s.running of the sequence to preempt: the lowest ranked.
func (s *Scheduler) victim() int {
	worst := 0
	for i, q := range s.running {
		if s.before(s.running[worst], q) {
			worst = i
		}
	}
	return worst
}

// preempt takes running[i]'s blocks back and puts it at the front of the waiting queue to be
// recomputed from scratch (its output so far is kept and re-fed as part of its prefix).
func (s *Scheduler) preempt(i int) *Sequence {
	seq := s.running[i]
	s.running = slices.Delete(s.running, i, i+1)
	s.freeBlocks(seq.ID)
	seq.Status = StatusPreempted
	seq.NumComputedTokens = 0
	seq.draft = seq.draft[:0]
	seq.NumPreemptions++
	s.waiting = slices.Insert(s.waiting, 0, seq)
	s.stats.Preemptions++
	return seq
}
