// Tests of the n-gram prompt-lookup proposer: hand-made sequences, the k limit, no match,
// validation, a differential fuzz test against a plain search, and a benchmark on long contexts.
package spec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
)

func mustNGram(t testing.TB, lo, hi int) *NGram {
	t.Helper()
	g, err := NewNGram(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNGramLookup(t *testing.T) {
	for _, c := range []struct {
		lo, hi, k int
		tokens    []int
		want      []int
	}{
		// vLLM's docstring example: [4 2 3] has no match, [2 3] does; 3 tokens follow it.
		{2, 3, 4, []int{1, 2, 3, 4, 2, 3}, []int{4, 2, 3}},
		{2, 3, 2, []int{1, 2, 3, 4, 2, 3}, []int{4, 2}}, // k limits
		{3, 3, 4, []int{1, 2, 3, 4, 2, 3}, nil},         // only [4 2 3] is tried
		{1, 1, 4, []int{5, 6, 7}, nil},                  // no match
		{1, 4, 4, []int{7}, nil},                        // too short
		{1, 1, 4, []int{7, 7}, []int{7}},                // overlapping occurrence
		// The longest match wins over a more recent shorter one: [1 2 3] at 0..2 beats [2 3]
		// at 5..6.
		{1, 3, 3, []int{1, 2, 3, 8, 9, 2, 3, 0, 1, 2, 3}, []int{8, 9, 2}},
		// Two occurrences of the same length: the most recent (followed by 6) wins.
		{2, 2, 2, []int{1, 2, 5, 1, 2, 6, 1, 2}, []int{6, 1}},
		// max caps the match: with max 2, [2 3] at 5..6 (most recent) beats [1 2 3] at 0..2.
		{1, 2, 3, []int{1, 2, 3, 8, 9, 2, 3, 0, 1, 2, 3}, []int{0, 1, 2}},
		// Repetition: a period-2 loop continues.
		{1, 3, 5, []int{4, 5, 4, 5, 4, 5}, []int{4, 5}},
		{1, 1, 3, []int{9, 9, 9, 9}, []int{9}},
	} {
		got := mustNGram(t, c.lo, c.hi).Lookup(c.tokens, c.k)
		if !slices.Equal(got, c.want) {
			t.Errorf("min %d max %d k %d %v: %v, want %v", c.lo, c.hi, c.k, c.tokens, got, c.want)
		}
		if naive := naiveLookup(c.tokens, c.lo, c.hi, c.k); !slices.Equal(naive, c.want) {
			t.Errorf("naive: min %d max %d k %d %v: %v, want %v", c.lo, c.hi, c.k, c.tokens, naive, c.want)
		}
	}
	if got := mustNGram(t, 1, 2).Lookup([]int{1, 2, 1}, 0); got != nil {
		t.Errorf("k 0: %v", got)
	}
}

func TestNGramPropose(t *testing.T) {
	g := mustNGram(t, 1, 3)
	reqs := []engine.ProposeRequest{
		{ID: 1, Tokens: []int{1, 2, 3, 4, 1, 2}, K: 2, Draft: make([]int, 0, 8), Probs: [][]float32{{1}}},
		{ID: 2, Tokens: []int{1, 2, 3}, K: 4, Draft: []int{9, 9}},
		{ID: 3, Tokens: []int{1, 2, 3, 1, 2, 3, 1}, K: 10},
	}
	capBefore := cap(reqs[0].Draft)
	if err := g.Propose(reqs); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]int{{3, 4}, {}, {2, 3, 1}} {
		if !slices.Equal(reqs[i].Draft, want) || reqs[i].Probs != nil {
			t.Errorf("request %d: draft %v probs %v, want %v and nil", i, reqs[i].Draft, reqs[i].Probs, want)
		}
	}
	if cap(reqs[0].Draft) != capBefore {
		t.Error("Draft's capacity not reused")
	}
	// The draft is a copy: changing it leaves Tokens alone.
	reqs[2].Draft[0] = 100
	if reqs[2].Tokens[4] != 2 {
		t.Error("Draft aliases Tokens")
	}
	// Forget keeps nothing to drop; the next proposals are unchanged.
	g.Forget(1)
	g.Forget(42)
	reqs[0].Draft = reqs[0].Draft[:0]
	if err := g.Propose(reqs[:1]); err != nil || !slices.Equal(reqs[0].Draft, []int{3, 4}) {
		t.Errorf("after Forget: %v %v", reqs[0].Draft, err)
	}
}

func TestNewNGramValidation(t *testing.T) {
	for _, c := range []struct {
		lo, hi int
		ok     bool
	}{{1, 1, true}, {1, 5, true}, {3, 4, true}, {0, 3, false}, {-1, 2, false}, {3, 2, false}, {2, 1, false}} {
		_, err := NewNGram(c.lo, c.hi)
		if (err == nil) != c.ok {
			t.Errorf("NewNGram(%d, %d): error %v", c.lo, c.hi, err)
		}
	}
}

// naiveLookup is the definition, plainly: for n from max down to min, the most recent earlier
// end position e (< len-1) where the last n tokens occur, and the tokens after it.
func naiveLookup(tokens []int, lo, hi, k int) []int {
	n := len(tokens)
	if k < 1 {
		return nil
	}
	for m := hi; m >= lo; m-- {
		if m > n-1 {
			continue
		}
		suffix := tokens[n-m:]
		for e := n - 2; e >= m-1; e-- {
			if slices.Equal(tokens[e-m+1:e+1], suffix) {
				return tokens[e+1 : min(e+1+k, n)]
			}
		}
	}
	return nil
}

// TestNGramRandom compares Lookup with the plain definition on random short-alphabet sequences.
func TestNGramRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 9))
	for range 20000 {
		tokens := make([]int, r.IntN(40))
		alpha := 1 + r.IntN(4)
		for i := range tokens {
			tokens[i] = r.IntN(alpha)
		}
		lo := 1 + r.IntN(4)
		hi := lo + r.IntN(4)
		k := r.IntN(6)
		got := mustNGram(t, lo, hi).Lookup(tokens, k)
		if want := naiveLookup(tokens, lo, hi, k); !slices.Equal(got, want) {
			t.Fatalf("min %d max %d k %d %v: %v, want %v", lo, hi, k, tokens, got, want)
		}
	}
}

// FuzzNGramLookup: Lookup never panics and agrees with the plain definition
// (go test -fuzz FuzzNGramLookup ./spec).
func FuzzNGramLookup(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 2, 3}, uint8(2), uint8(1), uint8(4), uint8(255))
	f.Add([]byte{}, uint8(1), uint8(0), uint8(1), uint8(3))
	f.Add([]byte{7, 7, 7, 7, 7}, uint8(1), uint8(3), uint8(2), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, lo, span, k, alpha uint8) {
		tokens := make([]int, len(data))
		for i, b := range data {
			tokens[i] = int(b) % (int(alpha) + 1)
		}
		g, err := NewNGram(int(lo), int(lo)+int(span))
		if err != nil {
			if lo >= 1 {
				t.Fatalf("NewNGram(%d, %d): %v", lo, int(lo)+int(span), err)
			}
			return
		}
		got := g.Lookup(tokens, int(k))
		if len(got) > int(k) {
			t.Fatalf("%d tokens for k %d", len(got), k)
		}
		if want := naiveLookup(tokens, int(lo), int(lo)+int(span), int(k)); !slices.Equal(got, want) {
			t.Fatalf("min %d max %d k %d %v: %v, want %v", lo, int(lo)+int(span), k, tokens, got, want)
		}
	})
}

// BenchmarkNGramPropose: one request's proposal on contexts of natural-text-like tokens
// (Zipf over a 32k vocabulary) of 4k and 32k tokens, min 1 max 5, k 5; "repeat" ends the
// context with a span copied from its first half (a long match exists).
func BenchmarkNGramPropose(b *testing.B) {
	g := mustNGram(b, 1, 5)
	for _, n := range []int{4096, 32768} {
		r := rand.New(rand.NewPCG(3, uint64(n)))
		z := rand.NewZipf(r, 1.1, 2, 32000-1)
		tokens := make([]int, n)
		for i := range tokens {
			tokens[i] = int(z.Uint64())
		}
		repeat := slices.Clone(tokens)
		copy(repeat[n-20:], repeat[n/4:n/4+20])
		for name, toks := range map[string][]int{"zipf": tokens, "repeat": repeat} {
			b.Run(fmt.Sprintf("%s-%dk", name, n/1024), func(b *testing.B) {
				reqs := []engine.ProposeRequest{{ID: 1, Tokens: toks, K: 5, Draft: make([]int, 0, 5)}}
				for b.Loop() {
					if err := g.Propose(reqs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
