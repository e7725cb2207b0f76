// This file implements the pipeline-stage interface of Model (GPipe, Huang et al. 2019;
// 1F1B, Narayanan et al. 2019, PipeDream): StageForward runs one micro-batch through the
// stage's blocks into an activation slot, StageBackward runs that slot's backward from the
// next stage's gradient (or, on the last stage, from the loss) and returns the gradient of
// the stage's input. Bad input and misuse of slots are errors; a failed tensor-parallel
// collective inside comes back as the *CommError.
package nn

import "fmt"

// Slots is the number of activation slots (micro-batches in flight) the model keeps.
func (m *Model) Slots() int { return len(m.slots) }

// StageForward runs one micro-batch of B sequences of T tokens through the stage, keeping its
// activations in slot (0 <= slot < Slots) until StageBackward(slot): a forward into a slot
// whose backward has not run replaces it. The first stage reads tokens (B,T); the others read
// in (B*T, Dim), the previous stage's output (copied). The last stage returns the mean
// cross-entropy over the B*T positions against targets (B,T) (targets nil: logits only, no
// backward) and out nil; the others return out (B*T, Dim), a view into the slot valid until
// the slot's next StageForward, and loss 0.
func (m *Model) StageForward(slot int, tokens, targets []int32, in []float32, B, T int) (out []float32, loss float32, err error) {
	defer CatchComm(&err)
	if slot < 0 || slot >= len(m.slots) {
		return nil, 0, fmt.Errorf("nn: activation slot %d of %d", slot, len(m.slots))
	}
	m.pending = false
	D := m.Cfg.Dim
	if err := m.checkShape(B, T); err != nil {
		return nil, 0, err
	}
	if !m.first {
		tokens = nil
		if len(in) < B*T*D {
			return nil, 0, fmt.Errorf("nn: stage input of %d values for %d x %d tokens of dim %d", len(in), B, T, D)
		}
	} else if err := m.checkIDs("token", tokens, B*T); err != nil {
		return nil, 0, err
	}
	if !m.last {
		targets = nil
	} else if targets != nil {
		if err := m.checkIDs("target", targets, B*T); err != nil {
			return nil, 0, err
		}
	}
	return m.graphStageForward(slot, tokens, targets, in, B, T)
}

// StageBackward runs the backward pass of the micro-batch in slot, adding its parameter
// gradients into G (and calling the hooks). On the last stage dout is ignored and the
// gradient is that of lossScale·(mean loss of the micro-batch): with M micro-batches of equal
// size, lossScale 1/M makes the sum over them the gradient of the mean over the whole batch
// (a power of two scales every gradient exactly). The other stages ignore lossScale and take
// dout (B*T, Dim), the gradient of their output. It returns the gradient of the stage's input
// (B*T, Dim), valid until the model's next StageBackward; nil on the first stage.
func (m *Model) StageBackward(slot int, dout []float32, lossScale float32) (din []float32, err error) {
	defer CatchComm(&err)
	if slot < 0 || slot >= len(m.slots) {
		return nil, fmt.Errorf("nn: activation slot %d of %d", slot, len(m.slots))
	}
	sl := &m.slots[slot]
	switch {
	case !sl.pending:
		return nil, fmt.Errorf("nn: backward of slot %d without a forward (with targets on the last stage)", slot)
	case !m.last && len(dout) < sl.B*sl.T*m.Cfg.Dim:
		return nil, fmt.Errorf("nn: output gradient of %d values for %d x %d tokens of dim %d", len(dout), sl.B, sl.T, m.Cfg.Dim)
	}
	return m.graphStageBackward(slot, dout, lossScale), nil
}
