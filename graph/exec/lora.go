// This file is the executor's hook for run-time low-rank adapters (package lora): after each
// matmul by a weight, the step's Adapters add their updates to the rows of the sequences that
// use one. Rows of one sequence are contiguous (a segment) and carry one adapter id; id 0 is
// the base model alone.
package exec

import "github.com/llmcloud/llmcloud/kernels"

// LoRASeg is the rows [Start, End) of one sequence and its adapter id (0: none).
type LoRASeg struct {
	Start, End int
	Adapter    uint32
}

// Adapters adds the low-rank updates of weight to out = x·weightᵀ (x [m, k], out [m, n]) for the
// rows of segs. It must compute each row from that row alone (batch invariance).
type Adapters interface {
	AddLoRA(pool *kernels.Pool, segs []LoRASeg, weight string, out, x []float32, m, k, n int) error
}

// addLoRA runs the step's adapters after a matmul, when it has any: only for matmuls over all
// the step's rows (the logits head runs over LogitRows and is never adapted).
func (p *Program) addLoRA(weight string, out, x []float32, m, k, n int) error {
	st := p.step
	if st == nil || st.LoRA == nil || len(st.LoRASegs) == 0 || m != len(st.Tokens) {
		return nil
	}
	return st.LoRA.AddLoRA(p.pool, st.LoRASegs, weight, out, x, m, k, n)
}
