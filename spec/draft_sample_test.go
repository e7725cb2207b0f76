// Tests of sampled drafts: at temperature > 0 each draft carries the distribution it was drawn
// from, the draws follow it, the same seed gives the same drafts, and top-k 1 is greedy.
package spec

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/sample"
)

func TestDraftSampled(t *testing.T) {
	d, b := newTestDraft(t, DraftOptions{})
	d2, _ := newTestDraft(t, DraftOptions{})
	toks := b.Tok.Encode("The little dog ran to the park and", true, false)
	p := &sample.Params{Temperature: 0.9, TopP: 0.95, Seed: 42}
	const K = 4
	var prev []int
	for step := range 3 {
		r1 := []engine.ProposeRequest{{ID: 1, Tokens: toks, K: K, Params: p}}
		r2 := []engine.ProposeRequest{{ID: 9, Tokens: toks, K: K, Params: p}}
		if err := d.Propose(r1); err != nil {
			t.Fatal(err)
		}
		if err := d2.Propose(r2); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r1[0].Draft, r2[0].Draft) {
			t.Fatalf("step %d: same seed, drafts %v and %v", step, r1[0].Draft, r2[0].Draft)
		}
		if len(r1[0].Draft) != K || len(r1[0].Probs) != K {
			t.Fatalf("step %d: %d drafts with %d distributions, want %d", step, len(r1[0].Draft), len(r1[0].Probs), K)
		}
		for i, q := range r1[0].Probs {
			var sum float64
			for _, v := range q {
				sum += float64(v)
			}
			if len(q) != b.Model.Config.Vocab || math.Abs(sum-1) > 1e-3 || q[r1[0].Draft[i]] <= 0 {
				t.Fatalf("step %d draft %d: token %d has q %g, sum %g over %d", step, i, r1[0].Draft[i], q[r1[0].Draft[i]], sum, len(q))
			}
		}
		prev = r1[0].Draft
		toks = append(slices.Clone(toks), prev[:2]...)
	}
	// top-k 1 leaves one token: the greedy draft, with a point mass
	r := []engine.ProposeRequest{{ID: 2, Tokens: toks, K: K, Params: &sample.Params{Temperature: 1, TopK: 1, Seed: 1}}}
	if err := d.Propose(r); err != nil {
		t.Fatal(err)
	}
	if exp := greedyRef(t, b.Model, toks, K); !slices.Equal(r[0].Draft, exp) || r[0].Probs[0][exp[0]] != 1 {
		t.Fatalf("top-k 1: drafts %v, want the greedy %v", r[0].Draft, exp)
	}
}

// TestDraftSampledFollowsQ: over many calls from one context, the first draft token's
// frequencies match the distribution the draft reports (within 5 standard errors).
func TestDraftSampledFollowsQ(t *testing.T) {
	d, b := newTestDraft(t, DraftOptions{})
	toks := b.Tok.Encode("Once upon a time", true, false)
	p := &sample.Params{Temperature: 1, TopK: 6, Seed: 7}
	const N = 3000
	counts := map[int]int{}
	var q []float32
	for range N {
		r := []engine.ProposeRequest{{ID: 1, Tokens: toks, K: 1, Params: p}}
		if err := d.Propose(r); err != nil {
			t.Fatal(err)
		}
		counts[r[0].Draft[0]]++
		q = slices.Clone(r[0].Probs[0])
	}
	kept := 0
	for id, v := range q {
		if v == 0 {
			if counts[id] != 0 {
				t.Fatalf("token %d drawn %d times with q 0", id, counts[id])
			}
			continue
		}
		kept++
		f, se := float64(counts[id])/N, math.Sqrt(float64(v)*(1-float64(v))/N)
		if math.Abs(f-float64(v)) > 5*se+1e-9 {
			t.Errorf("token %d: frequency %.4f, q %.4f (se %.4f)", id, f, v, se)
		}
	}
	if kept != 6 {
		t.Fatalf("top-k 6 kept %d tokens", kept)
	}
}

// TestArgmaxRef: the vector argmax equals the plain one, ties (to the lowest index) and signed
// zeros included, for lengths around the kernel's blocks of 8, argmax's chunks of 256 and a
// vocabulary's 4096.
func TestArgmaxRef(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + trial%40
		switch trial % 10 {
		case 0:
			n = 4096
		case 1:
			n = 250 + trial%300 // a partial last chunk
		}
		x := make([]float32, n)
		for i := range x {
			switch r.IntN(4) {
			case 0:
				x[i] = float32(r.IntN(3)) // ties
			case 1:
				x[i] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
			default:
				x[i] = r.Float32()*8 - 4
			}
		}
		if got, want := argmax(x), argmaxRef(x); got != want {
			t.Fatalf("trial %d (n %d): argmax %d, argmaxRef %d", trial, n, got, want)
		}
	}
}
