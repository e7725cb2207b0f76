// This file implements StepTimer: it runs single engine steps of a chosen shape (prefill
// chunks, decode sequences, their contexts) on the engine's own runner — model.ForwardBatch over
// a paged KV pool, then greedy sampling of every row that needs logits — and times them. The
// capacity simulator's step-time model is fitted to these measurements (`llmcloud profile
// --engine`, docs/simulate.md).
//
// The KV rows a step reads are whatever the pool holds (zeros at first): attention costs the
// same whatever the values, so no prefill has to run to give a decode its context.

package engine

import (
	"fmt"
	"time"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
)

// Chunk is one prefill entry of a step: Tokens prompt tokens run at positions Context.., after
// Context tokens already in the cache (a later chunk of a chunked prefill, or a prefix-cache hit).
type Chunk struct {
	Tokens, Context int
}

// StepShape is what one step runs: prefill chunks and decode sequences (one token each, after
// Decode[i] tokens of context).
type StepShape struct {
	Prefill []Chunk
	Decode  []int
}

// NumTokens is the step's batched tokens.
func (s StepShape) NumTokens() int {
	n := len(s.Decode)
	for _, c := range s.Prefill {
		n += c.Tokens
	}
	return n
}

// StepTimer runs steps of chosen shapes on a model with the engine's runner.
type StepTimer struct {
	cfg      Config
	r        *runner
	vocab    int
	samplers []seqSampler
}

// NewStepTimer makes a runner for m over a single paged KV pool of cfg.NumBlocks blocks of
// cfg.BlockSizeTokens (windowed KV groups are not modelled: every layer shares the pool).
func NewStepTimer(m *model.Model, cfg Config) (*StepTimer, error) {
	if cfg.NumBlocks <= 0 || cfg.BlockSizeTokens <= 0 {
		return nil, fmt.Errorf("engine: step timer: NumBlocks and BlockSizeTokens must be positive")
	}
	kv, err := m.NewPagedKV(cfg.NumBlocks, cfg.BlockSizeTokens)
	if err != nil {
		return nil, err
	}
	return &StepTimer{cfg: cfg, r: newRunner(m, kv, false, nil), vocab: m.Config.Vocab}, nil
}

// Run executes one step of shape s and returns its time: the forward pass and the sampling,
// as the engine's step spends them. Every entry needs logits (a decode, or a prompt's last
// chunk). It fails when the shape needs more blocks than the pool has.
func (t *StepTimer) Run(s StepShape) (time.Duration, error) {
	plan := &StepPlan{}
	next := 0 // blocks are handed out in order: entries never share one
	bs := t.cfg.BlockSizeTokens
	add := func(n, ctx int, prefill bool) error {
		nb := (ctx + n + bs - 1) / bs
		if next+nb > t.cfg.NumBlocks {
			return fmt.Errorf("engine: step timer: the shape needs more than the pool's %d blocks", t.cfg.NumBlocks)
		}
		table := make([]BlockID, nb)
		for i := range table {
			table[i] = BlockID(next + i)
		}
		next += nb
		toks := make([]int, n)
		for i := range toks {
			toks[i] = (ctx + i*7919 + len(plan.Seqs)*104729) % t.vocab
		}
		plan.Seqs = append(plan.Seqs, ScheduledSeq{ID: SeqID(len(plan.Seqs)), Tokens: toks, StartPos: ctx,
			BlockTable: table, NeedsLogits: true, Prefill: prefill})
		plan.NumBatchedTokens += n
		return nil
	}
	for _, c := range s.Prefill {
		if c.Tokens < 1 || c.Context < 0 {
			return 0, fmt.Errorf("engine: step timer: prefill chunk %+v", c)
		}
		if err := add(c.Tokens, c.Context, true); err != nil {
			return 0, err
		}
	}
	for _, ctx := range s.Decode {
		if ctx < 1 {
			return 0, fmt.Errorf("engine: step timer: decode context %d < 1", ctx)
		}
		if err := add(1, ctx, false); err != nil {
			return 0, err
		}
	}
	if len(plan.Seqs) == 0 {
		return 0, nil
	}
	for len(t.samplers) < len(plan.Seqs) {
		smp, err := sample.New(sample.Params{})
		if err != nil {
			return 0, err
		}
		t.samplers = append(t.samplers, newSeqSampler(smp, nil, 0))
	}
	t0 := time.Now()
	_, err := t.r.execute(plan, func(id SeqID) *seqSampler { return &t.samplers[id] })
	return time.Since(t0), err
}
