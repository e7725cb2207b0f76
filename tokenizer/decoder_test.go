// Unit tests of the streaming decoder's hold-back rule and of loader error messages.

package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestCompletePrefix(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"abc", 3}, {"a\xe6", 1}, {"a\xe6\x97", 1}, {"a\xe6\x97\xa5", 4}, {"\xf0\x9f\x98", 0},
		{"\xf0\x9f\x98\x80", 4}, {"a\x80", 2}, {"a\xff", 2}, {"a\xc0", 2}, {"\xe6a", 2}, // C0 never starts a valid sequence
		{"\xed\xa0", 2}, // would be a surrogate: never valid, passed through
	} {
		if got := completePrefix([]byte(c.in)); got != c.want {
			t.Errorf("completePrefix(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestDecoderHoldsPartialUTF8 streams "日" split over three byte tokens of tok512.
func TestDecoderHoldsPartialUTF8(t *testing.T) {
	tok := loadTok512(t)
	ids := tok.Encode("a日b", false, false)
	d := tok.NewDecoder()
	var parts []string
	for _, id := range ids {
		parts = append(parts, d.Add(id))
	}
	parts = append(parts, d.Flush())
	joined := strings.Join(parts, "")
	if joined != " a日b" {
		t.Fatalf("stream gave %q", joined)
	}
	for _, p := range parts {
		if strings.ContainsRune(p, '\uFFFD') || !isValidOrEmpty(p) {
			t.Errorf("streamed part %q splits a UTF-8 sequence (parts %q)", p, parts)
		}
	}
}

func isValidOrEmpty(s string) bool { return strings.ToValidUTF8(s, "") == s }

func TestLoaderErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("tokenizer.json", `{"model": {"type": "Unigram"}}`)
	if _, err := VocabFromHFJSON(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("unsupported model: err = %v", err)
	}
	notJSON := write("x.json", `{`)
	if _, err := VocabFromHFJSON(notJSON); err == nil || !strings.Contains(err.Error(), notJSON) {
		t.Errorf("bad JSON: err = %v", err)
	}
	vocab := write("vocab.json", `{"a": 0, "b": 1, "ab": 2}`)
	merges := write("merges.txt", "#version: 0.2\na b c\n")
	if _, err := VocabFromGPT2Files(vocab, merges); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad merge line: err = %v", err)
	}
	merges = write("merges.txt", "#version: 0.2\na b\n")
	v, err := VocabFromGPT2Files(vocab, merges)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("ab", false, false); !equalInts(got, []int{2}) {
		t.Errorf("Encode(ab) = %v, want [2]", got)
	}
	if _, err := New(&Vocab{Model: "rwkv", Tokens: []string{"x"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}); err == nil {
		t.Error("New accepted an unknown model")
	}
	if _, err := New(&Vocab{Model: "gpt2", Pre: "nope", Tokens: []string{"x"}, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}); err == nil {
		t.Error("New accepted an unknown pre-tokenizer")
	}
}

// TestSPMWordSplitExact checks that merging words separately gives llama.cpp's whole-text
// result, and that the splittability check sees pieces such as "a▁b".
func TestSPMWordSplitExact(t *testing.T) {
	tok := loadTok512(t)
	if !tok.spmSplit {
		t.Fatal("tok512 should allow word-wise merging")
	}
	text := "  Once upon a time,  there was\ta little   girl 日本 named Lily.  "
	whole := tok.mergeSPM(strings.ReplaceAll(" "+text, " ", spmSpace), nil)
	if got := tok.Encode(text, false, false); !equalInts(got, whole) {
		t.Errorf("word-wise %v != whole-text %v", got, whole)
	}
	if spmWordSplittable([]string{"▁a", "▁▁", "a▁b"}) {
		t.Error("a▁b must make the vocabulary not word-splittable")
	}
	if !spmWordSplittable([]string{"▁a", "▁▁b", "c"}) {
		t.Error("▁▁b is fine")
	}
}

func TestSPMWordSplitLlama2(t *testing.T) {
	v, err := VocabFromLlama2C(fixture.Path(t, "models", "llama2-tokenizer", "tokenizer.bin"), 32000)
	tok := newTok(t, v, err)
	b, err := os.ReadFile(fixture.Path(t, "reference", "brown_val_100k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b[:20000])
	whole := tok.mergeSPM(strings.ReplaceAll(" "+text, " ", spmSpace), nil)
	if got := tok.Encode(text, false, false); !equalInts(got, whole) {
		t.Errorf("Llama 2: word-wise merge (split=%v) differs from whole-text merge", tok.spmSplit)
	}
	if d := tok.Decode(append([]int{tok.BOS()}, whole...)); d != text {
		t.Error("Llama 2: brown text does not round-trip")
	}
}
