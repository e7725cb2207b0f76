// End-to-end CLI test of `tokenizer train` followed by `data prepare`.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/data"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// `llmcloud tokenizer train` then `llmcloud data prepare` on the bpetrain test text: the shards
// open, hold the documents' tokens, and their tokenizer is the one trained.
func TestTokenizerTrainAndDataPrepare(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join("..", "..", "tokenizer", "bpetrain", "testdata", "train.txt")
	tokDir := filepath.Join(dir, "tok")
	out, _ := run(t, "tokenizer", "train", "--vocab-size", "300", "--input", text, "-o", tokDir)
	if !strings.Contains(out, "300 tokens (1 special)") {
		t.Errorf("tokenizer train printed %q", out)
	}
	v, err := tokenizer.VocabFromHFJSON(filepath.Join(tokDir, "tokenizer.json"))
	if err != nil || len(v.Tokens) != 300 {
		t.Fatalf("trained tokenizer: %v", err)
	}
	dataDir := filepath.Join(dir, "data")
	out, _ = run(t, "data", "prepare", "--tokenizer", tokDir, "--input", text, "--val-fraction", "0.25", "-o", dataDir)
	if !strings.Contains(out, "train: ") || !strings.Contains(out, "val: ") {
		t.Errorf("data prepare printed %q", out)
	}
	d, err := data.Open(dataDir, "val")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.VocabSize() != 300 || d.Len() == 0 {
		t.Errorf("val split: vocab %d, %d tokens", d.VocabSize(), d.Len())
	}
	run(t, "tokenizer", "train", "--vocab-size", "300", "--input", text, "-o", tokDir, "--force")
	b, _ := os.ReadFile(d.TokenizerPath())
	a, _ := os.ReadFile(filepath.Join(tokDir, "tokenizer.json"))
	if string(a) != string(b) {
		t.Error("the data directory's tokenizer.json is not the trained one")
	}
	for _, args := range [][]string{
		{"tokenizer"}, {"tokenizer", "learn"}, {"tokenizer", "train", "-o", dir},
		{"data"}, {"data", "prepare", "--input", text}, {"data", "prepare", "--tokenizer", tokDir, "--input", text, "-o", dataDir},
		{"tokenizer", "train", "--vocab-size", "100", "--input", text, "-o", filepath.Join(dir, "x")},
		{"tokenizer", "train", "--vocab-size", "300", "--input", text, "-o", tokDir}, // exists, no --force
	} {
		if code := runMain(args, &strings.Builder{}, &strings.Builder{}); code == 0 {
			t.Errorf("llmcloud %s: exit 0", strings.Join(args, " "))
		}
	}
}
