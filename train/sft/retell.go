// This file generates the retelling dataset: instructions to repeat a given text word for
// word, in Alpaca's instruction/input/output form. Its inputs are passages of stories (runs
// of whole sentences) and lists of random words, which nothing but copying the input can
// predict; fine-tuned on it, a small model learns to copy (its training loss falls from about
// 3 to under 0.5 once induction heads form), and retelling becomes the input-grounded
// workload of n-gram prompt lookup (docs/speculative.md, "n-gram lookup on a model that
// copies").
package sft

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// RetellExample is one generated example.
type RetellExample struct {
	Instruction string `json:"instruction"`
	Input       string `json:"input"`
	Output      string `json:"output"`
}

// The two instructions of the retelling dataset.
const (
	RetellStory = "Repeat the story word for word."
	RetellWords = "Repeat these words."
)

const (
	retellStoryShare = 0.6 // examples that are passages; the rest are word lists
	retellMaxBytes   = 900 // a passage's length at most (cut at a space)
	retellMinWords   = 8   // a word list's length
	retellMaxWords   = 80
)

// GenerateRetell makes n examples from docs (plain-text documents; line breaks inside one
// become spaces) with seed: a passage of one document (a random run of its sentences) with
// probability 0.6, else a list of 8-80 words drawn uniformly from every word (run of ASCII
// letters) of docs. The output of every example is its input. Empty docs give no examples.
func GenerateRetell(docs []string, n int, seed uint64) []RetellExample {
	var sents [][]string
	seen := map[string]bool{}
	var words []string
	for _, d := range docs {
		flat := strings.Join(strings.Fields(d), " ")
		if flat == "" {
			continue
		}
		sents = append(sents, sentences(flat))
		for _, w := range strings.FieldsFunc(flat, func(c rune) bool { return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') }) {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	if len(sents) == 0 {
		return nil
	}
	slices.Sort(words)
	r := rand.New(rand.NewPCG(seed, 0x726574656c6c)) // stream "retell"
	out := make([]RetellExample, 0, n)
	for range n {
		var text, inst string
		if r.Float64() < retellStoryShare {
			s := sents[r.IntN(len(sents))]
			k := 1 + r.IntN(len(s))
			i := r.IntN(len(s) - k + 1)
			text, inst = cut(strings.Join(s[i:i+k], " "), retellMaxBytes), RetellStory
		} else {
			ws := make([]string, retellMinWords+r.IntN(retellMaxWords-retellMinWords+1))
			for j := range ws {
				ws[j] = words[r.IntN(len(words))]
			}
			text, inst = strings.Join(ws, " "), RetellWords
		}
		out = append(out, RetellExample{Instruction: inst, Input: text, Output: text})
	}
	return out
}

// sentences splits flat text (single spaces) after each '.', '!', '?' or '"' that a space
// follows.
func sentences(flat string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(flat); i++ {
		if flat[i+1] == ' ' && strings.IndexByte(`.!?"`, flat[i]) >= 0 {
			out = append(out, flat[start:i+1])
			start = i + 2
		}
	}
	return append(out, flat[start:])
}

// cut shortens s to at most n bytes, at its last space within them (or at n bytes when
// there is none).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n+1], ' '); i > 0 {
		return s[:i]
	}
	return s[:n]
}
