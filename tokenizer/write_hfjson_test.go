// Tests of MarshalHFJSON: GPT-2, Qwen2 and Llama 3 vocabularies written as tokenizer.json read
// back (tokenizer.VocabFromHFJSON) to the same tokens, merges and encodings.
package tokenizer_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
	spm := &tokenizer.Vocab{Model: "llama", Tokens: []string{"<unk>", "<s>", "</s>"}}
	if _, err := tokenizer.MarshalHFJSON(spm); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("SentencePiece: %v", err)
	}
}
