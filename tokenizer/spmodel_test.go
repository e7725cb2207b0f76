// VocabFromSentencePiece against llama2.c's export of the same models (tokenizer.bin): the same
// pieces, scores and encodings.

package tokenizer

import (
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestSentencePieceModel(t *testing.T) {
	for _, c := range []struct{ model, bin string }{
		{"stories260K/tok512.model", "stories260K/tok512.bin"},
		{"llama2-tokenizer/tokenizer.model", "llama2-tokenizer/tokenizer.bin"},
	} {
		v, err := VocabFromSentencePiece(fixture.Path(t, "models", c.model))
		if err != nil {
			t.Fatal(err)
		}
		w, err := VocabFromLlama2C(fixture.Path(t, "models", c.bin), 0)
		if err != nil {
			t.Fatal(err)
		}
		if v.Model != "llama" || len(v.Tokens) != len(w.Tokens) || !slices.Equal(v.Scores, w.Scores) ||
			v.BOS != 1 || v.EOS != 2 || v.UNK != 0 || !v.AddBOS || !v.AddSpacePrefix {
			t.Fatalf("%s: model %q, %d/%d tokens, bos %d eos %d unk %d", c.model, v.Model, len(v.Tokens), len(w.Tokens), v.BOS, v.EOS, v.UNK)
		}
		for i := 3; i < len(v.Tokens); i++ {
			if v.Tokens[i] != w.Tokens[i] || v.Types[i] != w.Types[i] {
				t.Fatalf("%s: token %d %q (type %d) vs %q (%d)", c.model, i, v.Tokens[i], v.Types[i], w.Tokens[i], w.Types[i])
			}
		}
		a, _ := New(v)
		b, _ := New(w)
		for _, s := range []string{"Once upon a time", " two  spaces\n\nand 日本 🙂"} {
			if x, y := a.Encode(s, true, false), b.Encode(s, true, false); !slices.Equal(x, y) {
				t.Errorf("%s: %q: %v vs %v", c.model, s, x, y)
			}
		}
	}
	if _, err := VocabFromSentencePiece(fixture.Path(t, "models", "stories260K", "tok512.bin")); err == nil {
		t.Error("tok512.bin read as a SentencePiece model")
	}
}
