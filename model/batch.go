// This file implements the batched forward pass of the serving engine: one ragged batch of
// rows from many sequences (prefill chunks and decode tokens mixed) runs through the model's
// compiled graph (BuildGraph, the serving passes, graph/exec) with each linear layer as ONE
// matmul over all the step's rows; each row is rotated at its own position, its K/V row is
// written into its sequence's paged-KV slot, and attention reads each sequence's keys and
// values through its block table. Logits are computed only for the rows that need them.
//
// Batch invariance: a row's result does not depend on the other rows of the batch. Row-wise
// ops (norms, RoPE, SwiGLU row by row) and paged attention are per row by construction;
// matmuls sum each output in an order that does not depend on m for m >= 2 (the GEMM paths),
// but m == 1 takes the GEMV path whose order differs. With Batch.Invariant set, matmuls go
// through kernels.MatMulInvariant, which runs a lone row on the GEMM kernels.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/profile"
)

// BatchSeq is one sequence's share of a batch: Tokens at positions StartPos.., K/V slots
// through BlockTable (which must cover StartPos+len(Tokens) positions). Positions before
// StartPos must already be in the pool.
type BatchSeq struct {
	Tokens     []int
	StartPos   int
	BlockTable []int32
	// GroupTables are the sequence's tables of KV groups 1.. (GroupTables[g-1]) when kv has
	// several (model.NewPagedKVGroups); BlockTable is group 0's. A windowed group's table may
	// hold -1 for blocks wholly before the window of the first row.
	GroupTables [][]int32
	NeedsLogits bool // return the logits of this sequence's last row
	// NumLogits, with NeedsLogits, asks for the logits of the last NumLogits rows instead
	// (speculative decoding verifies a token and its drafts in one row each); 0 means 1.
	NumLogits int
	// Adapter is the run-time LoRA adapter's id in Batch.LoRA (0: the base model alone).
	Adapter uint32

	allLogits bool // with NeedsLogits: the logits of every row (Forward's allLogits)
}

// Batch is the reusable state of ForwardBatch: the compiled graph (serving.go) with its
// activation buffers for the largest batch seen so far. One Batch serves one caller at a time.
type Batch struct {
	// Invariant makes every row's result bit-identical whatever the batch (see the file
	// comment). It costs single-sequence decode the GEMV fast path.
	Invariant bool
	// Recorder, when set, times every op of the forward pass on it (graph/exec's profiling).
	Recorder *profile.Recorder
	// KeepHidden makes each forward keep the hidden rows (hidden.go) that produced its logits,
	// for Hidden. Off, it costs nothing.
	KeepHidden bool
	// Observer, when set, sees every matmul's input rows and weight names (calibration,
	// package quant/calib).
	Observer exec.MatMulObserver
	// LoRA, when set, adds the adapters of the sequences with an Adapter id after each matmul
	// (package lora's Registry).
	LoRA exec.Adapters
	// StageInput is a later pipeline stage's input (Part): the residual stream of the batch's
	// rows, [rows, Dim], as the stage before output it.
	StageInput []float32

	prog   *exec.Program
	progOf *Model // the model prog was compiled for
	step   exec.Step
	logits []float32 // [rows needing logits, Vocab] when the caller gives no buffer
	piped  []float32 // a first pipeline stage's logits (forwardPipe), when the caller gives no buffer
	micro  [][]BatchSeq
	hidden hiddenRows
}

// ForwardBatch runs seqs as one ragged batch over the paged cache kv and returns the logits
// [rows asked for, Vocab] (one row per seq with NeedsLogits, or its NumLogits), in seqs order. The logits alias b's buffers and
// are valid until b's next use.
func (m *Model) ForwardBatch(b *Batch, kv *PagedKV, seqs []BatchSeq) ([]float32, error) {
	return m.forwardBatch(nil, false, b, kv, seqs)
}

// forwardBatch is ForwardBatch writing the logits into dst when it has the capacity; otherwise
// into a new slice if fresh is set, or into b's buffer.
func (m *Model) forwardBatch(dst []float32, fresh bool, b *Batch, kv *PagedKV, seqs []BatchSeq) ([]float32, error) {
	cfg := &m.Config
	if kd, vd := m.cacheDims(); len(kv.K) != cfg.Layers || kv.KVDim != kd || kv.VDim != vd {
		return nil, fmt.Errorf("model: forward batch: paged KV has %d layers of %d+%d, model %d of %d+%d",
			len(kv.K), kv.KVDim, kv.VDim, cfg.Layers, kd, vd)
	}
	n, nl := 0, 0
	for si, s := range seqs {
		end := s.StartPos + len(s.Tokens)
		switch {
		case len(s.Tokens) == 0:
			return nil, fmt.Errorf("model: forward batch: sequence %d has no tokens", si)
		case s.StartPos < 0:
			return nil, fmt.Errorf("model: forward batch: sequence %d starts at %d", si, s.StartPos)
		case len(s.GroupTables) != kv.numGroups()-1:
			return nil, fmt.Errorf("model: forward batch: sequence %d has tables for %d KV groups, the pool %d", si, len(s.GroupTables)+1, kv.numGroups())
		}
		for g := range kv.numGroups() {
			if err := kv.checkTable(si, g, s.groupTable(g), s.StartPos, end); err != nil {
				return nil, err
			}
		}
		for _, t := range s.Tokens {
			if t < 0 || t >= cfg.Vocab {
				return nil, fmt.Errorf("model: forward batch: sequence %d: token %d out of range [0, %d)", si, t, cfg.Vocab)
			}
		}
		n += len(s.Tokens)
		switch {
		case s.NeedsLogits && s.allLogits:
			nl += len(s.Tokens)
		case s.NeedsLogits && s.NumLogits > len(s.Tokens):
			return nil, fmt.Errorf("model: forward batch: sequence %d asks for the logits of %d rows of %d", si, s.NumLogits, len(s.Tokens))
		case s.NeedsLogits:
			nl += max(s.NumLogits, 1)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("model: forward batch: no tokens")
	}
	prog, err := m.program(b)
	if err != nil {
		return nil, err
	}
	if m.Pipe != nil && !m.LastStage() { // rank 0 of a pipeline (pipeline.go)
		return m.forwardPipe(dst, fresh, b, kv, prog, seqs, nl)
	}
	if err := m.beginStep(b, kv, seqs); err != nil {
		return nil, err
	}
	if !m.LastStage() { // the residual stream of every row goes to the next stage
		return m.forwardStage(b, prog, n)
	}
	st := &b.step
	switch {
	case cap(dst) >= nl*cfg.Vocab:
		st.Out = dst
	case fresh && nl > 0:
		st.Out = make([]float32, nl*cfg.Vocab)
	default:
		if len(b.logits) < nl*cfg.Vocab {
			b.logits = make([]float32, nl*cfg.Vocab)
		}
		st.Out = b.logits
	}
	logits, err := prog.Run(st)
	clear(st.Rows) // drop the callers' block tables
	for g := range st.GroupRows {
		clear(st.GroupRows[g])
	}
	st.KV, st.Out, st.LoRA, st.Hidden = exec.KV{}, nil, nil, nil
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if err := b.hidden.keep(b, cfg.Dim, nl); err != nil {
		return nil, err
	}
	if nl == 0 {
		return nil, nil
	}
	return logits[:nl*cfg.Vocab], nil
}

// beginStep calls OnForward with seqs (checked) and prepares b's step for them over kv.
func (m *Model) beginStep(b *Batch, kv *PagedKV, seqs []BatchSeq) error {
	if m.OnForward != nil {
		if err := m.OnForward(seqs); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	st := &b.step
	st.Tokens, st.Rows, st.LogitRows = st.Tokens[:0], st.Rows[:0], st.LogitRows[:0]
	ng := kv.numGroups()
	for len(st.GroupRows) < ng-1 {
		st.GroupRows = append(st.GroupRows, nil)
	}
	st.GroupRows = st.GroupRows[:ng-1]
	for g := range st.GroupRows {
		st.GroupRows[g] = st.GroupRows[g][:0]
	}
	st.LoRA, st.LoRASegs = nil, st.LoRASegs[:0]
	for _, s := range seqs {
		if s.Adapter != 0 && b.LoRA != nil {
			st.LoRA = b.LoRA
			st.LoRASegs = append(st.LoRASegs, exec.LoRASeg{Start: len(st.Tokens), End: len(st.Tokens) + len(s.Tokens), Adapter: s.Adapter})
		}
		for j, t := range s.Tokens {
			st.Tokens = append(st.Tokens, t)
			st.Rows = append(st.Rows, kernels.PagedRow{Pos: s.StartPos + j, Table: s.BlockTable})
			for g, tab := range s.GroupTables {
				st.GroupRows[g] = append(st.GroupRows[g], kernels.PagedRow{Pos: s.StartPos + j, Table: tab})
			}
		}
		if !s.NeedsLogits {
			continue
		}
		first := len(st.Tokens) - max(s.NumLogits, 1)
		if s.allLogits {
			first = len(st.Tokens) - len(s.Tokens)
		}
		for r := first; r < len(st.Tokens); r++ {
			st.LogitRows = append(st.LogitRows, r)
		}
	}
	st.KV = exec.KV{K: kv.K, V: kv.V, KQ: kv.KQ, VQ: kv.VQ, KFmt: kv.KFmt, VFmt: kv.VFmt, BlockSize: kv.BlockSize, Group: kv.Group}
	st.Hidden = b.StageInput
	return nil
}

// groupTable is s's block table of KV group g.
func (s *BatchSeq) groupTable(g int) []int32 {
	if g == 0 {
		return s.BlockTable
	}
	return s.GroupTables[g-1]
}

// checkTable checks sequence si's table of group g for positions start..end-1: it covers them,
// and every block from the one holding the first position the group's window lets the first
// row read (position 0 without a window) is inside the group's pool.
func (kv *PagedKV) checkTable(si, g int, table []int32, start, end int) error {
	bs := kv.BlockSize
	if len(table)*bs < end {
		return fmt.Errorf("model: forward batch: sequence %d: %d blocks of %d slots do not cover positions 0..%d",
			si, len(table), bs, end-1)
	}
	first := 0
	if w := kv.groupWindow(g); w > 0 {
		first = max(0, start-w+1) / bs
	}
	nb := kv.groupBlocks(g)
	for _, blk := range table[first : (end+bs-1)/bs] {
		if blk < 0 || int(blk) >= nb {
			return fmt.Errorf("model: forward batch: sequence %d: block %d outside the pool of %d", si, blk, nb)
		}
	}
	return nil
}
