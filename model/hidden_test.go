package model

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

// outputMatrix is m's output matrix [Vocab, Dim] as float32 (the embedding when tied).
func outputMatrix(t *testing.T, m *Model) []float32 {
	t.Helper()
	w := m.Weights["output.weight"]
	if w == nil {
		w = m.Weights["token_embd.weight"]
	}
	f, err := w.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// checkHiddenLogits asserts that hidden [rows, Dim] times the output matrix gives logits.
func checkHiddenLogits(t *testing.T, m *Model, hidden, logits []float32) {
	t.Helper()
	D, V := m.Config.Dim, m.Config.Vocab
	if len(hidden)*V != len(logits)*D {
		t.Fatalf("%d hidden values for %d logits (dim %d, vocab %d)", len(hidden), len(logits), D, V)
	}
	out := outputMatrix(t, m)
	for r := range len(hidden) / D {
		h := hidden[r*D : (r+1)*D]
		for v := range V {
			var s float64
			for i, x := range h {
				s += float64(x) * float64(out[v*D+i])
			}
			if got := float64(logits[r*V+v]); math.Abs(got-s) > 1e-3*(1+math.Abs(s)) {
				t.Fatalf("row %d token %d: logit %v, hidden x output %v", r, v, got, s)
			}
		}
	}
}

// TestForwardBatchHidden checks Batch.Hidden: with KeepHidden, the rows returned times the
// output matrix are the logits returned (a chunk's NumLogits rows beside a decode); without,
// Hidden is nil.
func TestForwardBatchHidden(t *testing.T) {
	m, err := OpenGGUF(fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := newPagedSim(t, m, 2, 40, 4, 3, false)
	ps := randPrompts(m, []int{9, 5, 4}, 11)
	run := func(seqs []BatchSeq) []float32 {
		t.Helper()
		for i := range seqs {
			end := seqs[i].StartPos + len(seqs[i].Tokens)
			for len(s.tables[i])*s.kv.BlockSize < end {
				s.tables[i] = append(s.tables[i], s.free[0])
				s.free = s.free[1:]
			}
			seqs[i].BlockTable = s.tables[i]
		}
		logits, err := m.ForwardBatch(&s.b, s.kv, seqs)
		if err != nil {
			t.Fatal(err)
		}
		return logits
	}
	run([]BatchSeq{{Tokens: ps[0], NeedsLogits: true}, {Tokens: ps[1], NeedsLogits: true}})
	if h := s.b.Hidden(); h != nil {
		t.Fatalf("Hidden without KeepHidden: %d values", len(h))
	}
	s.b.KeepHidden = true
	logits := run([]BatchSeq{
		{Tokens: ps[2], StartPos: len(ps[0]), NeedsLogits: true, NumLogits: 3},
		{Tokens: []int{7}, StartPos: len(ps[1]), NeedsLogits: true},
	})
	h := s.b.Hidden()
	if len(h) != 4*m.Config.Dim {
		t.Fatalf("Hidden has %d values, want 4 rows of %d", len(h), m.Config.Dim)
	}
	checkHiddenLogits(t, m, h, logits)

	// The single-sequence path: every row's hidden state.
	c := m.NewCache(32)
	c.KeepHidden(true)
	all, err := m.Forward(c, ps[0], 0, true)
	if err != nil {
		t.Fatal(err)
	}
	checkHiddenLogits(t, m, c.Hidden(), all)
}
