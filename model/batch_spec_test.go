package model

import (
	"strings"
	"testing"
)

// TestForwardBatchNumLogits is what speculative decoding's verification needs: a token and
// its k drafts run as one chunk with NumLogits = k+1 give, in Invariant mode, the very logits
// that k+1 one-token decode steps give (bit for bit), also beside another sequence's decode.
func TestForwardBatchNumLogits(t *testing.T) {
	for name, m := range batchModels(t) {
		t.Run(name, func(t *testing.T) {
			V := m.Config.Vocab
			ps := randPrompts(m, []int{13, 6, 5}, 7)
			prefix, other, chunk := ps[0], ps[1], ps[2] // chunk: the last known token + 4 drafts
			k := len(chunk) - 1
			run := func(s *pagedSim, seqs []BatchSeq) []float32 {
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
				return append([]float32(nil), logits...)
			}
			// Reference: the prefix, then one decode step per chunk token.
			one := newPagedSim(t, m, 1, 40, 4, 1, true)
			run(one, []BatchSeq{{Tokens: prefix, NeedsLogits: true}})
			var want []float32
			for i, tok := range chunk {
				want = append(want, run(one, []BatchSeq{{Tokens: []int{tok}, StartPos: len(prefix) + i, NeedsLogits: true}})...)
			}
			// The chunk verified at once, beside another sequence (on other blocks).
			s := newPagedSim(t, m, 2, 40, 4, 2, true)
			run(s, []BatchSeq{{Tokens: prefix, NeedsLogits: true}, {Tokens: other, NeedsLogits: true}})
			got := run(s, []BatchSeq{
				{Tokens: chunk, StartPos: len(prefix), NeedsLogits: true, NumLogits: k + 1},
				{Tokens: []int{3}, StartPos: len(other), NeedsLogits: true},
			})
			if len(got) != (k+2)*V {
				t.Fatalf("got %d logits, want %d rows of %d", len(got), k+2, V)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("row %d token %d: verified %v, decoded %v", i/V, i%V, got[i], want[i])
				}
			}
		})
	}
}

func TestForwardBatchNumLogitsTooMany(t *testing.T) {
	m := batchModels(t)["qwen3"]
	kv, err := m.NewPagedKV(8, 4)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	_, err = m.ForwardBatch(&b, kv, []BatchSeq{{Tokens: []int{1, 2}, BlockTable: []int32{0}, NeedsLogits: true, NumLogits: 3}})
	if err == nil || !strings.Contains(err.Error(), "logits of 3 rows of 2") {
		t.Fatalf("err = %v", err)
	}
}
