package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// batchModels are the models the batched-forward tests run on: the small synthetic Qwen2 /
// Qwen3 / Llama (MQA) configurations, and the shared stories260K (F32) and rand3M (Q8_0).
func batchModels(t *testing.T) map[string]*Model {
	t.Helper()
	ms := map[string]*Model{}
	for i, cfg := range qwenConfigs() {
		m, err := New(cfg, randWeights(cfg, int64(10+i)))
		if err != nil {
			t.Fatal(err)
		}
		ms[cfg.Arch] = m
	}
	if testing.Short() {
		return ms
	}
	ms["stories260K"] = openRef(t, []string{"models", "stories260K", "stories260K.bin"})
	ms["rand3M-q8_0"] = openRef(t, []string{"models", "rand3M", "rand3M-q8_0.gguf"})
	ms["rand3M-f16"] = openRef(t, []string{"models", "rand3M", "rand3M-f16.gguf"}) // AVX2: F16 packs
	return ms
}

// pagedSim drives ForwardBatch for a set of sequences: it hands out blocks from a shuffled
// free list, so the same sequence lands on different blocks in different runs.
type pagedSim struct {
	m      *Model
	kv     *PagedKV
	b      Batch
	free   []int32
	tables [][]int32
	toks   [][]int // tokens so far per sequence
	done   []int   // positions in the cache per sequence
	logits [][][]float32
}

func newPagedSim(t *testing.T, m *Model, nseq, numBlocks, blockSize int, seed uint64, invariant bool) *pagedSim {
	kv, err := m.NewPagedKV(numBlocks, blockSize)
	if err != nil {
		t.Fatal(err)
	}
	s := &pagedSim{m: m, kv: kv, tables: make([][]int32, nseq), toks: make([][]int, nseq),
		done: make([]int, nseq), logits: make([][][]float32, nseq)}
	s.b.Invariant = invariant
	for _, b := range rand.New(rand.NewPCG(seed, 1)).Perm(numBlocks) {
		s.free = append(s.free, int32(b))
	}
	return s
}

// step runs n[i] new tokens of each sequence i with n[i] > 0 (taken from toks[i] after done[i]);
// sequences whose tokens are all computed get their logits recorded and the argmax appended.
func (s *pagedSim) step(t *testing.T, n []int) {
	t.Helper()
	var seqs []BatchSeq
	var ids []int
	for i, c := range n {
		if c == 0 {
			continue
		}
		end := s.done[i] + c
		for len(s.tables[i])*s.kv.BlockSize < end {
			s.tables[i] = append(s.tables[i], s.free[0])
			s.free = s.free[1:]
		}
		seqs = append(seqs, BatchSeq{Tokens: s.toks[i][s.done[i]:end], StartPos: s.done[i],
			BlockTable: s.tables[i], NeedsLogits: end == len(s.toks[i])})
		ids = append(ids, i)
	}
	logits, err := s.m.ForwardBatch(&s.b, s.kv, seqs)
	if err != nil {
		t.Fatal(err)
	}
	V := s.m.Config.Vocab
	j := 0
	for k, sq := range seqs {
		i := ids[k]
		s.done[i] += len(sq.Tokens)
		if sq.NeedsLogits {
			row := append([]float32(nil), logits[j*V:(j+1)*V]...)
			j++
			s.logits[i] = append(s.logits[i], row)
			s.toks[i] = append(s.toks[i], argmax(row))
		}
	}
}

func randPrompts(m *Model, lens []int, seed uint64) [][]int {
	r := rand.New(rand.NewPCG(seed, 2))
	var out [][]int
	for _, l := range lens {
		p := make([]int, l)
		for i := range p {
			p[i] = r.IntN(m.Config.Vocab)
		}
		out = append(out, p)
	}
	return out
}

// TestForwardBatchMatchesForward runs sequences as a ragged batch (prompt chunks mixed with
// decodes) and compares every logits row with Forward over the sequence's whole history.
func TestForwardBatchMatchesForward(t *testing.T) {
	for name, m := range batchModels(t) {
		t.Run(name, func(t *testing.T) {
			lens := []int{1, 5, 23, 40}
			s := newPagedSim(t, m, len(lens), 64, 4, 1, false)
			copy(s.toks, randPrompts(m, lens, 3))
			// step 0: whole prompts 0 and 1, first chunks of 2 and 3; then the rest; then decodes
			s.step(t, []int{1, 5, 10, 16})
			s.step(t, []int{1, 1, 13, 24})
			for range 6 {
				s.step(t, []int{1, 1, 1, 1})
			}
			tol := 1e-3
			if name == "rand3M-q8_0" {
				tol = 5e-2
			}
			for i := range lens {
				c := m.NewCache(len(s.toks[i]))
				all := s.toks[i][:len(s.toks[i])-1] // the last token has not been run
				want, err := m.Forward(c, all, 0, true)
				if err != nil {
					t.Fatal(err)
				}
				V := m.Config.Vocab
				for k, got := range s.logits[i] {
					row := lens[i] - 1 + k
					d := 0.0
					for v := range got {
						d = max(d, math.Abs(float64(got[v]-want[row*V+v])))
					}
					if d > tol {
						t.Errorf("seq %d logits %d (position %d): max |batch - forward| = %g", i, k, row, d)
					}
				}
			}
		})
	}
}

// TestForwardBatchInvariant checks batch invariance: in Invariant mode each sequence's logits
// are bit-identical whether it runs alone (whole prompt, then one-token decodes) or staggered
// among others (chunked prompt, decodes beside other sequences' prefills), on other blocks.
func TestForwardBatchInvariant(t *testing.T) {
	for name, m := range batchModels(t) {
		t.Run(name, func(t *testing.T) {
			lens := []int{3, 17, 1, 30, 9, 150}
			prompts := randPrompts(m, lens, 5)
			const decodes = 5
			alone := make([][][]float32, len(lens))
			for i, p := range prompts {
				s := newPagedSim(t, m, 1, 60, 4, uint64(i), true)
				s.toks[0] = append([]int(nil), p...)
				s.step(t, []int{len(p)})
				for range decodes {
					s.step(t, []int{1})
				}
				alone[i] = s.logits[0]
			}
			s := newPagedSim(t, m, len(lens), 200, 4, 99, true)
			for i, p := range prompts {
				s.toks[i] = append([]int(nil), p...)
			}
			// Sequence i starts at step i with chunks of at most 7 tokens.
			for st := 0; ; st++ {
				n := make([]int, len(lens))
				busy := false
				for i := range lens {
					if st < i || len(s.logits[i]) > decodes {
						continue
					}
					n[i] = min(7, len(s.toks[i])-s.done[i])
					busy = true
				}
				if !busy {
					break
				}
				s.step(t, n)
			}
			for i := range lens {
				for k := range alone[i] {
					for v := range alone[i][k] {
						if alone[i][k][v] != s.logits[i][k][v] {
							t.Fatalf("seq %d logits %d token %d: alone %v, batched %v", i, k, v, alone[i][k][v], s.logits[i][k][v])
						}
					}
				}
			}
		})
	}
}

// TestMatMulBatchInvariance checks Invariant mode's matmul: a row's result does not depend on
// how many rows run with it, on every linear-layer shape of the test models (this is what the
// kernels' GEMM paths must keep for batch invariance).
func TestMatMulBatchInvariance(t *testing.T) {
	for name, m := range batchModels(t) {
		out := m.Weights["output.weight"]
		if m.Config.Tied {
			out = m.Weights["token_embd.weight"]
		}
		for _, w := range []*tensor.Tensor{m.Weights["blk.0.ffn_gate.weight"], m.Weights["blk.0.ffn_down.weight"], out} {
			checkMatMulInvariant(t, name, w)
		}
	}
}

func checkMatMulInvariant(t *testing.T, name string, w *tensor.Tensor) {
	{
		nn, k := w.Shape[0], w.Shape[1]
		r := rand.New(rand.NewPCG(1, 1))
		x := make([]float32, 300*k)
		for i := range x {
			x[i] = r.Float32()*2 - 1
		}
		two := make([]float32, 2*nn)
		for _, rows := range []int{2, 3, 5, 64, 65, 70, 129, 300} {
			out := make([]float32, rows*nn)
			if err := kernels.Default.MatMulInvariant(out, x, w, rows); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < rows; i++ {
				in := append(append([]float32(nil), x[i*k:(i+1)*k]...), x[i*k:(i+1)*k]...)
				if err := kernels.Default.MatMul(two, in, w, 2); err != nil {
					t.Fatal(err)
				}
				for j := 0; j < nn; j++ {
					if two[j] != out[i*nn+j] {
						t.Fatalf("%s %s (%v %v): row %d of %d differs from the row run as two rows", name, w.Name, w.Type, w.Shape, i, rows)
					}
				}
			}
		}
	}
}
