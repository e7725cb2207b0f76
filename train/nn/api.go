// Package nn is the trainer's model: a Llama-family architecture of package model (Llama,
// Mistral, Qwen2, Qwen3: same Config, same GGUF tensor names and row-major layouts). Its forward and backward are
// model.BuildGraph's graph with its loss and reverse-mode gradient, compiled by
// graph/exec/trainexec over the model's parameters; there is no second definition. All
// parameters live in one flat buffer and all gradients in another; every tensor is a view.
// See docs/training.md, "Model forward/backward".
//
// For distributed training (docs/distributed-training.md) the parameters form units: unit 0
// the token embedding, units 1..L the blocks, unit L+1 the final norm and untied output.
// NewWith's Options let the caller supply each unit's weight and gradient storage (Units
// gives the sizes first), get BeforeUse/GradReady hooks around each unit's use in Forward and
// Backward, build one pipeline stage (blocks [lo, hi), K activation slots) driven by
// StageForward/StageBackward, recompute each block's activations in Backward instead of
// keeping them (Recompute), and shard the model over a tensor-parallel group (TP).
//
// This file holds the whole-model entry points, Forward and Backward, and the checks of their
// input (Validate).
package nn

import "fmt"

// Validate reports whether Forward accepts this batch: 1 <= B <= maxB, 1 <= T <= maxT,
// B*T tokens (and targets, when not nil) in [0, Vocab); a target may be -1 (no loss there).
func (m *Model) Validate(tokens, targets []int32, B, T int) error {
	if err := m.checkShape(B, T); err != nil {
		return err
	}
	if err := m.checkIDs("token", tokens, B*T); err != nil {
		return err
	}
	if targets != nil {
		return m.checkIDs("target", targets, B*T)
	}
	return nil
}

// SetDocStarts makes the following Forward/Backward calls on B x T batches attend within
// packed documents: starts[b*T+t] is the first row of row t's document (trainexec.SetDocStarts);
// nil returns to plain causal attention.
func (m *Model) SetDocStarts(starts []int32, B, T int) error {
	for _, p := range m.progs {
		if err := p.SetDocStarts(starts, B, T); err != nil {
			return fmt.Errorf("nn: %w", err)
		}
	}
	return nil
}

func (m *Model) checkShape(B, T int) error {
	if B < 1 || B > m.maxB || T < 1 || T > m.maxT {
		return fmt.Errorf("nn: batch %d x %d outside the allocated 1..%d x 1..%d", B, T, m.maxB, m.maxT)
	}
	return nil
}

// checkIDs checks that ids holds n ids in [0, Vocab).
func (m *Model) checkIDs(what string, ids []int32, n int) error {
	if len(ids) < n {
		return fmt.Errorf("nn: %d %ss for %d positions", len(ids), what, n)
	}
	for i, t := range ids[:n] {
		if what == "target" && t == -1 { // outside the loss mask (kernels.IgnoreTarget)
			continue
		}
		if t < 0 || int(t) >= m.Cfg.Vocab {
			return fmt.Errorf("nn: %s %d at position %d outside the vocabulary [0, %d)", what, t, i, m.Cfg.Vocab)
		}
	}
	return nil
}

// Forward runs tokens (B,T) through the model, keeping the activations, and returns the mean
// cross-entropy against targets (B,T) over the B*T positions; with targets nil it computes the
// logits only and returns 0. Each row of the batch is an independent sequence starting at
// position 0. Input that Validate rejects, or a model that is a pipeline stage (use
// StageForward), is a programming error and panics with its message.
func (m *Model) Forward(tokens, targets []int32, B, T int) float32 {
	if !m.first || !m.last {
		panic("nn: Forward on a pipeline stage (use StageForward)")
	}
	if err := m.Validate(tokens, targets, B, T); err != nil {
		panic(err.Error())
	}
	m.B, m.T, m.lastSlot = B, T, -1
	m.slots[0].pending = false
	m.pending = targets != nil
	defer commPanic()
	return m.prog.Forward(tokens, targets, B, T)
}

// AuxLoss is the mean over the moe layers of the routers' unweighted load-balancing loss in
// the last Forward (experts_used when the load is even; 0 for a dense model or without
// Options.MoEAuxCoef). Forward's loss is the cross-entropy alone; Backward differentiates it
// plus MoEAuxCoef times this.
func (m *Model) AuxLoss() float32 {
	return m.progs[max(m.lastSlot, 0)].AuxLoss()
}

// Backward adds d(mean loss)/d(parameters) of the last Forward to the gradients (call ZeroGrad
// between optimizer steps; without it, gradients accumulate over micro-batches). It runs once
// per Forward: calling it without a Forward with targets, or twice, is a programming error and
// panics.
func (m *Model) Backward() {
	if !m.pending {
		panic("nn: Backward needs a Forward with targets (and runs once per Forward)")
	}
	m.pending = false
	defer commPanic()
	m.prog.Backward()
}

// SetSoftTargets makes Backward differentiate the mean cross-entropy against target
// distributions (distillation): soft holds maxB*maxT rows of Vocab probabilities, row b*T+t for
// position t of batch row b, read at each Backward; the targets passed to Forward still select
// the rows in the loss (-1: none), and Forward's returned loss stays theirs. nil returns to the
// targets. Not with tensor parallelism.
func (m *Model) SetSoftTargets(soft []float32) error {
	for _, p := range m.progs {
		if err := p.SetSoftTargets(soft); err != nil {
			return fmt.Errorf("nn: %w", err)
		}
	}
	return nil
}
