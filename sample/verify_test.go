package sample

import (
	"math/rand/v2"
	"testing"
)

// TestVerifyGreedyEqualsSample: greedy verification returns exactly the tokens that Sample
// called row by row would give, stopping after the first draft that differs.
func TestVerifyGreedyEqualsSample(t *testing.T) {
	const V, k = 50, 4
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		logits := make([]float32, (k+1)*V)
		for i := range logits {
			logits[i] = float32(r.NormFloat64())
		}
		p := Params{FrequencyPenalty: 0.5, RepetitionPenalty: 1.3}
		ref, _ := New(p)
		ref.SetPrompt([]int{1, 2, 3})
		var want []int
		drafts := make([]int, k)
		agree := r.IntN(k + 1) // drafts agree with the greedy choice up to here
		for i := 0; i <= k; i++ {
			res, _ := ref.Sample(logits[i*V : (i+1)*V])
			want = append(want, res.ID)
			if i == k {
				break
			}
			drafts[i] = res.ID
			if i == agree {
				drafts[i] = (res.ID + 1) % V
				break
			}
		}
		for i := agree + 1; i < k; i++ {
			drafts[i] = r.IntN(V)
		}
		s, _ := New(p)
		s.SetPrompt([]int{1, 2, 3})
		got, err := s.Verify(logits, V, drafts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d tokens, want %d", trial, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i] {
				t.Fatalf("trial %d token %d: %d, want %d", trial, i, got[i].ID, want[i])
			}
		}
	}
}

func TestVerifyBadInput(t *testing.T) {
	s, _ := New(Params{})
	for _, c := range []struct {
		logits []float32
		drafts []int
		q      [][]float32
	}{
		{make([]float32, 10), []int{1}, nil},
		{make([]float32, 8), []int{4}, nil},
		{make([]float32, 8), []int{1}, [][]float32{{1}}},
		{make([]float32, 8), []int{1}, [][]float32{}},
	} {
		if _, err := s.Verify(c.logits, 4, c.drafts, c.q); err == nil {
			t.Errorf("Verify(%d logits, %v, %v): no error", len(c.logits), c.drafts, c.q)
		}
	}
}
