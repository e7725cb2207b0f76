// llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf with .inp/.out, tokenized with
// add_special=false, parse_special=false) for every vocabulary GGUF in testdata.

package tokenizer

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

func loadGGUFTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(fixture.Path(t, "models", "llamacpp-vocab", "ggml-vocab-"+name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := VocabFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// readVectors returns the test strings and expected ids of ggml-vocab-name.gguf.
func readVectors(t testing.TB, name string) ([]string, [][]int) {
	t.Helper()
	inp, err := os.ReadFile(fixture.Path(t, "models", "llamacpp-vocab", "ggml-vocab-"+name+".gguf.inp"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(fixture.Path(t, "models", "llamacpp-vocab", "ggml-vocab-"+name+".gguf.out"))
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	texts = texts[:len(texts)-1] // the file ends with a separator
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d inputs but %d output lines", name, len(texts), len(lines))
	}
	want := make([][]int, len(lines))
	for i, l := range lines {
		for _, f := range strings.Fields(l) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", name, i+1, err)
			}
			want[i] = append(want[i], id)
		}
	}
	return texts, want
}

var llamacppVocabs = []string{"llama-spm", "phi-3", "gpt-2", "deepseek-coder", "deepseek-llm",
	"falcon", "mpt", "refact", "starcoder", "bert-bge"}

func TestLlamaCppVectors(t *testing.T) {
	for _, name := range llamacppVocabs {
		t.Run(name, func(t *testing.T) {
			tok := loadGGUFTokenizer(t, name)
			texts, want := readVectors(t, name)
			for i, text := range texts {
				got := tok.Encode(text, false, false)
				if !equalInts(got, want[i]) {
					t.Errorf("Encode(%q)\n got %v\nwant %v", text, got, want[i])
				}
				checkStreaming(t, tok, got)
			}
		})
	}
}
