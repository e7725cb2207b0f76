// Tests of MarshalHFJSON: GPT-2, Qwen2 and Llama 3 vocabularies written as tokenizer.json read
// back (tokenizer.VocabFromHFJSON) to the same tokens, merges and encodings.
package tokenizer_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tokenizer"
)

var tokTexts = []string{"Hello world", " leading space and  double  spaces", "numbers 1234567 and 3.14159",
	"Unicode: héllo wörld, 你好, emoji 🙂", "code:\n\tif x != nil {\n\t\treturn err\n\t}", "I'm, you're, they'll"}

func TestTokenizerJSONRoundTrip(t *testing.T) {
	models := fixture.Path(t, "models")
	cases := []struct{ name, vocab, merges string }{
		{"gpt2", "gpt2-tokenizer/vocab.json", "gpt2-tokenizer/merges.txt"},
		{"qwen2", "qwen2-tokenizer/vocab.json", "qwen2-tokenizer/merges.txt"},
		{"llama3", "llama3.2-tokenizer/encoder.json", "llama3.2-tokenizer/vocab.bpe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tokenizer.VocabFromGPT2Files(filepath.Join(models, tc.vocab), filepath.Join(models, tc.merges))
			if err != nil {
				t.Fatal(err)
			}
			js, err := tokenizer.MarshalHFJSON(v)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := os.WriteFile(p, js, 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := tokenizer.VocabFromHFJSON(p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Tokens, w.Tokens) || !slices.Equal(v.Types, w.Types) || !slices.Equal(v.Merges, w.Merges) {
				t.Fatalf("vocabulary changed: %d/%d tokens, %d/%d merges", len(v.Tokens), len(w.Tokens), len(v.Merges), len(w.Merges))
			}
			if v.Pre != w.Pre || v.IgnoreMerges != w.IgnoreMerges || v.Normalize != w.Normalize || v.AddBOS != w.AddBOS {
				t.Errorf("pre %q/%q ignore_merges %v/%v normalize %q/%q add_bos %v/%v", v.Pre, w.Pre,
					v.IgnoreMerges, w.IgnoreMerges, v.Normalize, w.Normalize, v.AddBOS, w.AddBOS)
			}
			a, _ := tokenizer.New(v)
			b, _ := tokenizer.New(w)
			for _, s := range tokTexts {
				if x, y := a.Encode(s, true, false), b.Encode(s, true, false); !slices.Equal(x, y) {
					t.Errorf("%q: %v vs %v", s, x, y)
				}
			}
		})
	}
}

func TestTokenizerJSONRefusals(t *testing.T) {
	v := &tokenizer.Vocab{Model: "gpt2", Pre: "falcon", BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	for b := range 256 {
		v.Tokens = append(v.Tokens, string(tokenizer.ByteLevelRune(byte(b))))
	}
	if _, err := tokenizer.MarshalHFJSON(v); err == nil || !strings.Contains(err.Error(), "falcon") {
		t.Errorf("falcon pre-tokenizer: %v", err)
	}
	wpm := &tokenizer.Vocab{Model: "bert", Tokens: []string{"[PAD]", "[UNK]"}}
	if _, err := tokenizer.MarshalHFJSON(wpm); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("WordPiece: %v", err)
	}
}

// spmTexts exercise the space prefix, runs of spaces, byte fallback and decode.
var spmTexts = append([]string{"", " ", "  ", "Once upon a time", " Once", "  two  spaces  ", "end ",
	"line\nbreak\n\n", "\ttab", "42 and 3.14", "naïve café", "日本語", "emoji 🙂👍🏽", "<s> not special"}, tokTexts...)

// writeJSON marshals v as tokenizer.json and tokenizer_config.json into a new directory and
// reads them back.
func writeJSON(t *testing.T, v *tokenizer.Vocab) (*tokenizer.Vocab, []byte) {
	t.Helper()
	js, err := tokenizer.MarshalHFJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(p, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := hfdir.WriteTokenizerConfig(filepath.Join(dir, hfdir.TokenizerConfigFile), tokenizer.HFConfig(v, "", 0)); err != nil {
		t.Fatal(err)
	}
	w, err := tokenizer.VocabFromHFJSON(p)
	if err != nil {
		t.Fatal(err)
	}
	return w, js
}

// SentencePiece BPE vocabularies (llama2.c's tok512 and Llama 2's tokenizer.bin, scores and no
// merges) written as tokenizer.json: the merges made from the scores must tokenize as the
// scores do, and writing the vocabulary read back gives the same file.
func TestTokenizerJSONSentencePiece(t *testing.T) {
	for _, name := range []string{"stories260K/tok512.bin", "llama2-tokenizer/tokenizer.bin"} {
		t.Run(filepath.Dir(name), func(t *testing.T) {
			v, err := tokenizer.VocabFromLlama2C(fixture.Path(t, "models", name), 0)
			if err != nil {
				t.Fatal(err)
			}
			w, js := writeJSON(t, v)
			if !slices.Equal(v.Tokens, w.Tokens) || !slices.Equal(v.Types, w.Types) || w.Model != "llama" ||
				v.BOS != w.BOS || v.EOS != w.EOS || v.UNK != w.UNK || !w.AddBOS || !w.AddSpacePrefix || len(w.Merges) == 0 {
				t.Fatalf("vocabulary changed: model %q, %d/%d tokens, bos %d/%d eos %d/%d unk %d/%d, add_bos %v, prefix %v, %d merges",
					w.Model, len(v.Tokens), len(w.Tokens), v.BOS, w.BOS, v.EOS, w.EOS, v.UNK, w.UNK, w.AddBOS, w.AddSpacePrefix, len(w.Merges))
			}
			a, _ := tokenizer.New(v)
			b, err := tokenizer.New(w)
			if err != nil {
				t.Fatal(err)
			}
			// plus random strings of letters, spaces, digits, punctuation, accents, CJK and emoji
			rng := rand.New(rand.NewPCG(1, 2))
			alphabet := []rune("abcdefghijklmnopqrstuvwxyz  ETAOIN    .,!?'\n\t0123456789éüñ日本語中文🙂▁")
			texts := slices.Clone(spmTexts)
			for range 300 {
				r := make([]rune, rng.IntN(40))
				for i := range r {
					r[i] = alphabet[rng.IntN(len(alphabet))]
				}
				texts = append(texts, string(r))
			}
			for _, s := range texts {
				x, y := a.Encode(s, true, false), b.Encode(s, true, false)
				if !slices.Equal(x, y) {
					t.Errorf("%q: scores %v, merges %v", s, x, y)
				}
				if d := b.Decode(y); d != s && !strings.Contains(s, "▁") {
					t.Errorf("Decode(Encode(%q)) = %q", s, d)
				}
			}
			if _, js2 := writeJSON(t, w); string(js) != string(js2) {
				t.Errorf("writing the vocabulary read back changed tokenizer.json (%d vs %d bytes)", len(js), len(js2))
			}
		})
	}
}
