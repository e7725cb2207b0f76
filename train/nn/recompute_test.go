// This file checks Options.Recompute: bit-identical losses and gradients to the model that
// keeps every block's activations (tied and untied, two accumulated micro-batches), the same
// hook order, the activation memory it saves and the hardware FLOPs it adds.
package nn

import (
	"slices"
	"testing"
)

func TestRecompute(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := tinyConfig(tied)
		cfg.Layers = 4
		const B, T = 2, 5
		batches := testBatches(cfg, B, T, 2)
		wantLoss, plain := flatRun(t, cfg, B, T, batches)
		var log, plainLog []hookEvent
		opt := recordHooks(&log)
		opt.Recompute = true
		m, err := NewWith(cfg, B, T, testPool, opt)
		if err != nil {
			t.Fatal(err)
		}
		randomize(m, 5, 0.3) // flatRun's weights
		for i, b := range batches {
			if l := m.Forward(b[0], b[1], B, T); l != wantLoss[i] {
				t.Errorf("tied=%v batch %d: loss %v with recomputation, %v without", tied, i, l, wantLoss[i])
			}
			m.Backward()
		}
		_, g := m.Flat()
		if _, want := plain.Flat(); !slices.Equal(g, want) {
			t.Errorf("tied=%v: gradients with recomputation differ from those without", tied)
		}

		// Hooks: the same calls in the same order.
		hooked, _ := NewWith(cfg, B, T, testPool, recordHooks(&plainLog))
		hooked.Init(1)
		hooked.Forward(batches[0][0], batches[0][1], B, T)
		hooked.Backward()
		if got := log[:len(plainLog)]; !slices.Equal(got, plainLog) {
			t.Errorf("tied=%v: hooks with recomputation\n%v\nwithout\n%v", tied, got, plainLog)
		}

		// Memory: all blocks but one share their activations, so recomputation keeps at least
		// L−1 blocks' activations fewer (one block's: its norms, q/k/v, attention
		// probabilities, output, residual and FFN activations).
		c := &cfg
		N := B * T
		block := 3*N*c.Dim + 2*N + 2*N*c.QDim() + 2*N*c.KVDim() + B*c.Heads*T*T + 3*N*c.FFN
		if d := plain.prog.ActivationBytes() - m.prog.ActivationBytes(); d < int64(4*(cfg.Layers-1)*block) {
			t.Errorf("tied=%v: recomputation saves %d activation bytes, want at least %d (%d blocks of %d values)",
				tied, d, 4*(cfg.Layers-1)*block, cfg.Layers-1, block)
		}

		// Slots share it too: each slot keeps at least a block less than one program alone,
		// the blocks' activations being in the buffers the slots share.
		gtwo, err := NewWith(cfg, B, T, testPool, Options{Recompute: true, Slots: 2})
		if err != nil {
			t.Fatal(err)
		}
		if own, alone := gtwo.progs[1].ActivationBytes(), m.prog.ActivationBytes(); own+int64(4*block) > alone || gtwo.progs[0].SharedBytes() == 0 {
			t.Errorf("tied=%v: a second slot keeps %d bytes of its own (%d shared), one program %d: want a block's %d less",
				tied, own, gtwo.progs[0].SharedBytes(), alone, 4*block)
		}

		// FLOPs: the hardware count adds a third of the blocks' model count.
		mf, hf := m.FLOPsPerToken(T)
		pf, phf := plain.FLOPsPerToken(T)
		perBlock := 2*c.QDim()*c.Dim + 2*c.KVDim()*c.Dim + 3*c.FFN*c.Dim
		extra := float64(cfg.Layers) * (2*float64(perBlock) + 4*float64(c.Heads*c.HeadDim*T))
		if mf != pf || phf != pf || hf != mf+extra {
			t.Errorf("tied=%v: FLOPs/token model %g hardware %g with recomputation, %g %g without; want hardware model + %g", tied, mf, hf, pf, phf, extra)
		}
	}
}
