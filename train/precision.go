// This file implements mixed-precision training (--precision bf16), as Megatron-LM and
// DeepSpeed run it: the f32 weights stay the masters that AdamW updates (its moments are f32
// too); before each step's first forward (and each validation) a bf16 copy of every matrix
// weight is refreshed from them, and the pool runs every matrix product — the linear layers'
// three products (Y = X·Wᵀ, dX = dY·W, dW += dYᵀ·X) and attention's — through
// kernels.GemmBF16: operands rounded to bf16 (weights read from their copy, activations and
// gradients rounded as they are packed), products accumulated in f32. The loss, softmax, norm
// statistics, residual stream and gradients stay f32.
package train

import (
	"errors"
	"flag"
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
)

// bindPrecisionFlags adds the mixed-precision and loss-spike flags.
func bindPrecisionFlags(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Precision, "precision", c.Precision, "compute precision of the matrix products: fp32, or bf16 (bf16 operands, f32 accumulation; f32 master weights and AdamW state)")
	fs.Float64Var(&c.SpikeThreshold, "spike-threshold", c.SpikeThreshold, "skip a step whose gradient norm exceeds this many times the median of the last --spike-window steps' norms (0 = off; e.g. 5)")
	fs.IntVar(&c.SpikeWindow, "spike-window", c.SpikeWindow, "taken steps whose gradient norms the spike test's median is over (0 = 50)")
	fs.IntVar(&c.InjectSpike, "inject-spike", c.InjectSpike, "test/demo: multiply this (1-based) step's loss and gradient by 1000 (0 = never)")
}

// validatePrecision checks the mixed-precision and spike settings.
func (c *Config) validatePrecision() error {
	switch c.Precision {
	case "", "fp32", "bf16":
	default:
		return fmt.Errorf("train: --precision %q: want fp32 or bf16", c.Precision)
	}
	if c.SpikeThreshold < 0 || (c.SpikeThreshold > 0 && c.SpikeThreshold <= 1) {
		return fmt.Errorf("train: --spike-threshold %g: want 0 (off) or a factor above 1", c.SpikeThreshold)
	}
	if c.SpikeWindow < 0 || c.InjectSpike < 0 {
		return errors.New("train: --spike-window and --inject-spike must not be negative")
	}
	return nil
}

// BF16 reports whether the run computes in bf16.
func (c *Config) BF16() bool { return c.Precision == "bf16" }

// setupPrecision puts the trainer's pool in bf16 mode with a copy of every matrix weight.
// Only one process (grid 1x1x1) runs bf16 so far.
func (t *Trainer) setupPrecision() error {
	if !t.Cfg.BF16() {
		return nil
	}
	if t.par.grid.World() > 1 {
		return errors.New("train: --precision bf16 runs in one process (no --dp/--tp/--pp/--nproc) so far")
	}
	if !kernels.BF16Fast() {
		t.log.Warn("no bf16 kernel in assembly on this CPU: --precision bf16 computes in fp32")
	}
	var ws [][]float32
	for _, p := range t.Net.Params() {
		if len(p.Shape) >= 2 {
			ws = append(ws, p.W)
		}
	}
	w := kernels.NewBF16Weights(t.pool, ws...)
	t.pool.SetBF16(w)
	t.log.Info("mixed precision", "precision", "bf16", "kernel", kernels.BF16KernelName(),
		"bf16_weight_bytes", w.Bytes())
	return nil
}

// syncBF16 refreshes the bf16 weight copies from the f32 masters (before a step or a
// validation: after the previous update, a restore or the initialisation).
func (t *Trainer) syncBF16() {
	if w := t.pool.BF16(); w != nil {
		w.Refresh(t.pool)
	}
}
