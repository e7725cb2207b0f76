// The real corpora: a 4096-token tokenizer trained on the Brown corpus train split
// (../shared/data/brown, optional) reaches its size, round-trips the val split and compresses
// it; retrained on the default model's distilled stories (recipes/default/data) it is the
// committed recipes/default/tokenizer.json, byte for byte. BenchmarkTrainBrown measures
// counting and merging.
package bpetrain

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/internal/shared"
	"github.com/llmcloud/llmcloud/tokenizer"
)

func TestBrown4096(t *testing.T) {
	train := shared.Path(t, "data", "brown", "train.txt")
	val := fixture.Path(t, "data", "brown", "val.txt")
	res := train4096(t, train)
	if len(res.Vocab.Tokens) != 4096 || res.Merges != 4096-257 {
		t.Fatalf("%d tokens, %d merges", len(res.Vocab.Tokens), res.Merges)
	}
	tok, err := tokenizer.New(res.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(val)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(string(b), false, false)
	if tok.Decode(ids) != string(b) {
		t.Fatal("val.txt does not round-trip")
	}
	// bytes per token on held-out text: the 256 bytes alone give 1.0; GPT-2's 50k vocabulary
	// gives about 4.4 on such English. 4096 merges learned here must give well over 3.
	ratio := float64(len(b)) / float64(len(ids))
	t.Logf("val.txt: %d bytes, %d tokens, %.2f bytes/token; %d distinct pre-tokens, last merge seen %d times",
		len(b), len(ids), ratio, res.Words, res.LastMin)
	if ratio < 3.3 {
		t.Errorf("%.2f bytes per token on val.txt", ratio)
	}
}

// The default model's tokenizer is what `llmcloud tokenizer train --vocab-size 4096` makes of
// the recipe's training text (recipes/default/README.md), byte for byte.
func TestDefaultTokenizerRetrains(t *testing.T) {
	gz, err := os.Open("../../recipes/default/data/train.txt.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(t.TempDir(), "train.txt")
	f, err := os.Create(train)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, zr); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	res := train4096(t, train)
	js, err := tokenizer.MarshalHFJSON(res.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	if committed, err := os.ReadFile(defaultTokenizer); err != nil || !bytes.Equal(js, committed) {
		t.Errorf("retrained tokenizer differs from %s (%v)", defaultTokenizer, err)
	}
}

// train4096 trains the recipe's tokenizer on the text file train: `llmcloud tokenizer train
// --vocab-size 4096` (GPT-2 pre-tokenizer, <|endoftext|> special, pairs seen at least twice).
func train4096(t *testing.T, train string) *Result {
	t.Helper()
	counts, err := CountWords([]string{train}, "gpt-2", []string{"<|endoftext|>"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Train(counts, Options{VocabSize: 4096, MinFrequency: 2, Specials: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func BenchmarkTrainBrown(b *testing.B) {
	train := shared.Path(b, "data", "brown", "train.txt")
	b.Run("count", func(b *testing.B) {
		for b.Loop() {
			if _, err := CountWords([]string{train}, "gpt-2", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	counts, err := CountWords([]string{train}, "gpt-2", nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, vocab := range []int{4096, 8192} {
		b.Run("merge-"+strconv.Itoa(vocab), func(b *testing.B) {
			for b.Loop() {
				if _, err := Train(counts, Options{VocabSize: vocab, MinFrequency: 2, Specials: []string{"<|endoftext|>"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
