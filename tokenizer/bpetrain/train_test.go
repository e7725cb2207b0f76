// Tests of the trainer against committed data: the tokenizer.json trained from testdata/train.txt
// is reproduced byte for byte, the project's encoder gives the ids @huggingface/tokenizers gave
// for it (testdata/golden.json), decode(encode(s)) == s, chunked counting equals whole-text
// counting, and bad options are refused.
package bpetrain

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tokenizer"
)

// The committed tokenizer was trained with:
//
//	llmcloud tokenizer train --vocab-size 384 --input testdata/train.txt -o testdata
var testdataOptions = Options{VocabSize: 384, MinFrequency: 2, Specials: []string{"<|endoftext|>"}}

func TestRetrainIsByteIdentical(t *testing.T) {
	counts, err := CountWords([]string{"testdata/train.txt"}, "gpt-2", testdataOptions.Specials)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Train(counts, testdataOptions)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vocab.Tokens) != 384 {
		t.Errorf("%d tokens, want 384", len(res.Vocab.Tokens))
	}
	dir := t.TempDir()
	if err := WriteDir(dir, res.Vocab, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, res.Vocab, false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second WriteDir without overwrite: %v", err)
	}
	if err := WriteDir(dir, res.Vocab, true); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		got, _ := os.ReadFile(filepath.Join(dir, f))
		want, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from testdata/%s (%d vs %d bytes)", f, f, len(got), len(want))
		}
	}
}

// defaultTokenizer is the default model's tokenizer (trained on the recipe's distilled
// stories, see recipes/default/README.md).
const defaultTokenizer = "../../recipes/default/tokenizer.json"

func loadTestdata(t testing.TB, path string) *tokenizer.Tokenizer {
	t.Helper()
	v, err := tokenizer.VocabFromHFJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if v.BOS != 0 || v.EOS != 0 || !v.AddBOS || v.Tokens[0] != "<|endoftext|>" {
		t.Fatalf("BOS %d EOS %d AddBOS %v token 0 %q", v.BOS, v.EOS, v.AddBOS, v.Tokens[0])
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestEncodesLikeHuggingFace(t *testing.T) {
	for tokPath, golden := range map[string]string{"testdata/tokenizer.json": "testdata/golden.json", defaultTokenizer: "testdata/golden_default.json"} {
		t.Run(filepath.Base(golden), func(t *testing.T) { checkGolden(t, loadTestdata(t, tokPath), golden) })
	}
}

func checkGolden(t *testing.T, tok *tokenizer.Tokenizer, golden string) {
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Text    string `json:"text"`
			IDs     []int  `json:"ids"`
			Decoded string `json:"decoded"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 20 {
		t.Fatalf("only %d golden cases", len(g.Cases))
	}
	for _, c := range g.Cases {
		// @huggingface/tokenizers splits added tokens out of the text: parseSpecial=true
		if got := tok.Encode(c.Text, false, true); !slices.Equal(got, c.IDs) {
			t.Errorf("%q:\n got %v\nwant %v", c.Text, got, c.IDs)
		}
		if got := tok.Decode(c.IDs); got != strings.ReplaceAll(c.Decoded, "<|endoftext|>", "") {
			t.Errorf("decode %v: %q, Hugging Face %q", c.IDs, got, c.Decoded)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	tok := loadTestdata(f, "testdata/tokenizer.json")
	for _, s := range []string{"", "The council met.", "  two\n\n\tspaces ", "naïve 你好 😀", "<|endoftext|>", "\xff\xfe bad utf-8 \xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s, false, false)
		if got := tok.Decode(ids); got != s {
			t.Fatalf("decode(encode(%q)) = %q (ids %v)", s, got, ids)
		}
		for _, id := range ids {
			if id == 0 {
				t.Fatalf("%q: special token produced without parseSpecial", s)
			}
		}
	})
}

func TestChunkedCountingMatchesWhole(t *testing.T) {
	defer func(n int) { chunkBytes = n }(chunkBytes)
	text := strings.Repeat("Line one, with words.\n  indented\n\n\n\tTabbed line\r\nCRLF line\n \u00a0nbsp start\n"+
		"<|endoftext|>after special\nmore text here 12345\n", 40) + "no newline at the end"
	path := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(path, []byte(text), 0o644)
	want := map[string]int64{}
	for _, part := range strings.Split(text, "<|endoftext|>") {
		pieces, _ := tokenizer.PreTokenize("gpt-2", part)
		for _, p := range pieces {
			want[p]++
		}
	}
	for _, n := range []int{7, 64, 1000, 1 << 20} {
		chunkBytes = n
		got, err := CountWords([]string{path}, "gpt-2", []string{"<|endoftext|>"})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("chunks of %d bytes: %d distinct pre-tokens, whole text %d", n, len(got), len(want))
			for k, v := range got {
				if want[k] != v {
					t.Logf("%q: %d vs %d", k, v, want[k])
				}
			}
		}
	}
}

func TestSafeCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{{"abc\ndef", 4}, {"abc\n def", 0}, {"a\nb\n\nc", 2}, {"a\nb\n\u00a0c", 2}, {"no newline", 0}, {"end\n", 0},
		{"a \nb", 0}, {"\u00a0\nb", 0}, {"x\ny\r\nz", 2}, {"\nb", 0}} {
		if got := safeCut([]byte(c.in)); got != c.want {
			t.Errorf("safeCut(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestTrainRefusals(t *testing.T) {
	counts := map[string]int64{"ab": 3}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{VocabSize: 300}, "special token"},
		{Options{VocabSize: 256, Specials: []string{"<s>"}}, "below 257"},
		{Options{VocabSize: 300, Specials: []string{"<s>", "<s>"}}, "repeated"},
		{Options{VocabSize: 300, Specials: []string{""}}, "empty"},
	} {
		if _, err := Train(counts, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := CountWords([]string{"testdata/nope.txt"}, "gpt-2", nil); err == nil {
		t.Error("missing input accepted")
	}
	if _, err := CountWords([]string{"testdata/train.txt"}, "nope", nil); err == nil {
		t.Error("unknown pre-tokenizer accepted")
	}
	// min frequency stops early; the vocabulary is then smaller than asked
	res, err := Train(counts, Options{VocabSize: 400, MinFrequency: 4, Specials: []string{"<s>"}})
	if err != nil || len(res.Vocab.Tokens) != 257 || res.Merges != 0 {
		t.Errorf("min frequency 4 on a pair seen 3 times: %v", err)
	}
}
