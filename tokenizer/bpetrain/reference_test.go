// The plain reference trainer: every step recounts every pair of every word and takes the
// best one with the same tie rule; the incremental trainer must learn exactly the same merges.
package bpetrain

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// referenceMerges learns merges the slow, obvious way.
func referenceMerges(counts map[string]int64, nMerges int, minFreq int64) []string {
	type w struct {
		syms []string
		freq int64
	}
	var words []w
	for t, n := range counts {
		var s []string
		for i := range len(t) {
			s = append(s, t[i:i+1])
		}
		words = append(words, w{s, n})
	}
	var merges []string
	for len(merges) < nMerges {
		pc := map[[2]string]int64{}
		for _, wd := range words {
			for i := 0; i+1 < len(wd.syms); i++ {
				pc[[2]string{wd.syms[i], wd.syms[i+1]}] += wd.freq
			}
		}
		var best [2]string
		var bestN int64
		for p, n := range pc {
			if n > bestN || n == bestN && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestN = p, n
			}
		}
		if bestN == 0 || bestN < minFreq {
			break
		}
		merges = append(merges, tokenizer.ByteLevelSpelling(best[0])+" "+tokenizer.ByteLevelSpelling(best[1]))
		for k := range words {
			s := words[k].syms
			var out []string
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, best[0]+best[1])
					i++
				} else {
					out = append(out, s[i])
				}
			}
			words[k].syms = out
		}
	}
	return merges
}

func checkAgainstReference(t *testing.T, counts map[string]int64, vocab int, minFreq int64) {
	t.Helper()
	res, err := Train(counts, Options{VocabSize: vocab, MinFrequency: minFreq, Specials: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	// the reference may learn merges whose result already exists; run it for as many merges
	want := referenceMerges(counts, res.Merges, minFreq)
	if !slices.Equal(res.Vocab.Merges, want) {
		for i := range min(len(want), len(res.Vocab.Merges)) {
			if want[i] != res.Vocab.Merges[i] {
				t.Fatalf("merge %d: %q, reference %q (of %d/%d)", i, res.Vocab.Merges[i], want[i], len(res.Vocab.Merges), len(want))
			}
		}
		t.Fatalf("%d merges, reference %d", len(res.Vocab.Merges), len(want))
	}
	if len(res.Vocab.Tokens) < vocab && res.Merges == len(want) {
		// stopped early: the reference must not be able to go on either
		if more := referenceMerges(counts, res.Merges+1, minFreq); len(more) > res.Merges {
			t.Fatalf("stopped at %d tokens, but the reference finds merge %q", len(res.Vocab.Tokens), more[len(more)-1])
		}
	}
}

func TestMatchesReferenceRandomWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		// few letters and small counts: many ties and overlapping pairs such as "aaa"
		alpha := []string{"a", "b", "c", "é", " ", "aa", "ab"}[:2+trial%5]
		counts := map[string]int64{}
		for range 5 + rng.IntN(60) {
			var s string
			for range 1 + rng.IntN(9) {
				s += alpha[rng.IntN(len(alpha))]
			}
			counts[s] += 1 + int64(rng.IntN(4))
		}
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			checkAgainstReference(t, counts, 257+1+rng.IntN(40), int64(trial%3))
		})
	}
}

func TestMatchesReferenceBrown(t *testing.T) {
	path := fixture.Path(t, "data", "brown", "val.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := t.TempDir() + "/part.txt"
	os.WriteFile(f, b[:50_000], 0o644)
	counts, err := CountWords([]string{f}, "gpt-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstReference(t, counts, 257+150, 2)
}
