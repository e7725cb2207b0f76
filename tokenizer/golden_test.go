// Golden vectors made by @huggingface/tokenizers (testdata/gen/gen_goldens.mjs) for Qwen3's
// real tokenizer.json and for the GPT-2-layout files in testdata/models.

package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

type goldenFile struct {
	Tokenizer string `json:"tokenizer"`
	Cases     []struct {
		Text string `json:"text"`
		IDs  []int  `json:"ids"`
	} `json:"cases"`
}

func readGolden(t testing.TB, name string) goldenFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden_"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("golden_%s.json: %v", name, err)
	}
	if len(g.Cases) == 0 {
		t.Fatalf("golden_%s.json has no cases", name)
	}
	return g
}

// checkGolden encodes every golden text (with special tokens parsed, as the HF tools do) and
// checks ids, Decode round trip and streaming.
func checkGolden(t *testing.T, tok *Tokenizer, name string) {
	g := readGolden(t, name)
	for _, c := range g.Cases {
		got := tok.Encode(c.Text, false, true)
		if !equalInts(got, c.IDs) {
			t.Errorf("%s: Encode(%q)\n got %v\nwant %v", name, c.Text, got, c.IDs)
			continue
		}
		checkStreaming(t, tok, got)
	}
}

// qwen3JSON un-gzips the committed Qwen3 tokenizer.json into a temporary directory.
func qwen3JSON(t testing.TB) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "qwen3-tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func newTok(t testing.TB, v *Vocab, err error) *Tokenizer {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestGoldenQwen3JSON(t *testing.T) {
	v, err := VocabFromHFJSON(qwen3JSON(t))
	tok := newTok(t, v, err)
	if v.Pre != "qwen2" || v.Normalize != "NFC" {
		t.Errorf("Pre=%q Normalize=%q, want qwen2 NFC", v.Pre, v.Normalize)
	}
	checkGolden(t, tok, "qwen3")
	id, ok := tok.TokenID("<|im_end|>")
	if !ok || !tok.IsEOG(id) {
		t.Errorf("<|im_end|> (%d, %v) should be an end-of-generation token", id, ok)
	}
	if got := tok.Encode("<|im_start|>", false, false); len(got) == 1 {
		t.Errorf("parseSpecial=false must not produce the <|im_start|> id, got %v", got)
	}
}

func TestGoldenQwen2Files(t *testing.T) {
	d := fixture.Path(t, "models", "qwen2-tokenizer")
	v, err := VocabFromGPT2Files(filepath.Join(d, "vocab.json"), filepath.Join(d, "merges.txt"))
	tok := newTok(t, v, err)
	if v.Pre != "qwen2" {
		t.Errorf("Pre = %q, want qwen2", v.Pre)
	}
	checkGolden(t, tok, "qwen2")
}

func TestGoldenGPT2Files(t *testing.T) {
	d := fixture.Path(t, "models", "gpt2-tokenizer")
	v, err := VocabFromGPT2Files(filepath.Join(d, "vocab.json"), filepath.Join(d, "merges.txt"))
	tok := newTok(t, v, err)
	checkGolden(t, tok, "gpt2")
}

func TestGoldenLlama32Files(t *testing.T) {
	d := fixture.Path(t, "models", "llama3.2-tokenizer")
	v, err := VocabFromGPT2Files(filepath.Join(d, "encoder.json"), filepath.Join(d, "vocab.bpe"))
	tok := newTok(t, v, err)
	if v.Pre != "llama-bpe" || v.BOS != 128000 {
		t.Errorf("Pre=%q BOS=%d, want llama-bpe 128000", v.Pre, v.BOS)
	}
	checkGolden(t, tok, "llama3.2")
	if ids := tok.Encode("hi", true, false); len(ids) == 0 || ids[0] != 128000 {
		t.Errorf("Encode with addSpecial should start with <|begin_of_text|>: %v", ids)
	}
}
