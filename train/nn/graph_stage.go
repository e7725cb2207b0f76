// This file runs pipeline stages, activation slots and recomputation through the graph: one
// trainexec program per slot over the same parameters, sharing what no slot keeps from its
// forward to its backward (the stage's blocks of model.BuildGraph,
// recomputed per block with Options.Recompute), driven by StageForward and StageBackward.
package nn

import "github.com/llmcloud/llmcloud/graph/exec/trainexec"

// buildSlots compiles one program per activation slot and returns the first.
func (m *Model) buildSlots(params []trainexec.Param) (*trainexec.Program, error) {
	opt := m.execOptions()
	opt.FirstBlock, opt.EndBlock, opt.Recompute = m.lo, m.hi, m.opt.Recompute
	opt.MoEAuxCoef = m.opt.MoEAuxCoef
	if m.opt.Adapter != nil {
		params = m.adapterExec(params, &opt)
	}
	ps, err := trainexec.ForModelSlots(m.Cfg, params, m.maxB, m.maxT, m.pool, opt, len(m.slots))
	if err != nil {
		return nil, err
	}
	m.progs, m.prog = ps, ps[0]
	return m.prog, nil
}

// setHook sets the hook on every slot's program.
func (m *Model) setHook(h func(i int, after bool)) {
	for _, p := range m.progs {
		p.SetHook(h)
	}
}

// graphStageForward is StageForward through slot's program (its input checked).
func (m *Model) graphStageForward(slot int, tokens, targets []int32, in []float32, B, T int) ([]float32, float32, error) {
	defer commPanic()
	sl := &m.slots[slot]
	sl.B, sl.T = B, T
	m.B, m.T, m.lastSlot = B, T, slot
	sl.pending = !m.last || targets != nil
	D := m.Cfg.Dim
	if !m.first {
		in = in[:B*T*D]
	}
	loss := m.progs[slot].StageForward(tokens, targets, in, B, T)
	return m.progs[slot].Output(), loss, nil
}

// graphStageBackward is StageBackward through slot's program (its pending forward checked).
func (m *Model) graphStageBackward(slot int, dout []float32, lossScale float32) []float32 {
	defer commPanic()
	sl := &m.slots[slot]
	sl.pending = false
	if !m.last {
		dout = dout[:sl.B*sl.T*m.Cfg.Dim]
	}
	return m.progs[slot].StageBackward(dout, lossScale)
}
