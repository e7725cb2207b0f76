// This file checks the reductions tensor parallelism makes: their number and sizes against
// Megatron-LM's in one Forward and Backward, and with Options.Recompute the same results bit
// for bit at the price of each block's row-parallel reductions run again in Backward.
package nn

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTPCommunication counts the reductions of one Forward and one Backward against
// Megatron-LM's: forward, the embedding and every row-parallel output (attn_output, ffn_down)
// sum n·D values, the loss reduces n maxima and 2n sums; backward, the gradients of the
// column-parallel inputs (the final norm output, xn2, xn1 of every block) sum n·D values.
// Nothing of size n·V is ever reduced.
func TestTPCommunication(t *testing.T) {
	const B, T = 2, 5
	cfg := tpConfig(false)
	ranks, g := tpRanks(t, cfg, initModel(t, cfg, B, T, 1), 2, B, T, Options{})
	r := rand.New(rand.NewPCG(9, 9))
	tokens, targets := randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)
	onAll(ranks, func(_ int, m *Model) { m.Forward(tokens, targets, B, T) })
	n, nd := B*T, B*T*cfg.Dim
	want := []int{nd}
	for range cfg.Layers {
		want = append(want, nd, nd)
	}
	want = append(want, 2*n)
	if !slices.Equal(g.sums, want) || !slices.Equal(g.maxes, []int{n}) {
		t.Errorf("forward: sums %v and maxes %v, want sums %v and maxes [%d]", g.sums, g.maxes, want, n)
	}
	g.sums, g.maxes = nil, nil
	onAll(ranks, func(_ int, m *Model) { m.Backward() })
	want = []int{nd}
	for range cfg.Layers {
		want = append(want, nd, nd)
	}
	if !slices.Equal(g.sums, want) || len(g.maxes) != 0 {
		t.Errorf("backward: sums %v and maxes %v, want sums %v and no maxes", g.sums, g.maxes, want)
	}
}

// TestTPRecompute: tensor-parallel ranks with Options.Recompute give bit for bit the losses and
// gradients of ranks without it, re-running each block's two row-parallel reductions in
// Backward (2L more sums of n·D values, in block order L-1..0).
func TestTPRecompute(t *testing.T) {
	const B, T, TP = 2, 5, 2
	cfg := tpConfig(true)
	full := initModel(t, cfg, B, T, 3)
	r := rand.New(rand.NewPCG(10, 10))
	tokens, targets := randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)
	run := func(recompute bool) ([]*Model, []float32, *memGroup) {
		ranks, g := tpRanks(t, cfg, full, TP, B, T, Options{Recompute: recompute})
		losses := make([]float32, TP)
		onAll(ranks, func(i int, m *Model) { losses[i] = m.Forward(tokens, targets, B, T) })
		g.sums = nil
		onAll(ranks, func(_ int, m *Model) { m.Backward() })
		return ranks, losses, g
	}
	plain, lp, gp := run(false)
	rec, lr, gr := run(true)
	if !slices.Equal(lp, lr) {
		t.Errorf("losses %v with Recompute, %v without", lr, lp)
	}
	for i := range plain {
		_, a := plain[i].Flat()
		_, b := rec[i].Flat()
		if !slices.Equal(a, b) {
			t.Errorf("TP rank %d: gradients with Recompute differ from those without", i)
		}
	}
	// Through the graph only the attention's reduction is run again: the FFN's gives the
	// block's output, a checkpoint.
	if want := len(gp.sums) + cfg.Layers; len(gr.sums) != want {
		t.Errorf("backward with Recompute made %d sums, want %d (%d without)", len(gr.sums), want, len(gp.sums))
	}
}
