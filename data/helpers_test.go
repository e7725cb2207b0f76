// Test helpers: a small byte-level BPE tokenizer written as tokenizer.json +
// tokenizer_config.json, and data sets of known token streams.
package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// writeTestTokenizer writes dir/tokenizer.json: the 256 bytes, a few English merges and
// <|endoftext|> as BOS and EOS.
func writeTestTokenizer(t *testing.T, dir string) string {
	t.Helper()
	v := &tokenizer.Vocab{Model: "gpt2", Pre: "gpt-2", BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	for b := range 256 {
		v.Tokens = append(v.Tokens, string(tokenizer.ByteLevelRune(byte(b))))
		v.Types = append(v.Types, tokenizer.TypeNormal)
	}
	sp := string(tokenizer.ByteLevelRune(' '))
	for _, m := range [][2]string{{"t", "h"}, {sp, "th"}, {"e", "r"}, {sp + "th", "e"}, {"i", "n"}, {sp, "a"}} {
		v.Merges = append(v.Merges, m[0]+" "+m[1])
		v.Tokens = append(v.Tokens, m[0]+m[1])
		v.Types = append(v.Types, tokenizer.TypeNormal)
	}
	v.BOS, v.EOS = len(v.Tokens), len(v.Tokens)
	v.Tokens = append(v.Tokens, "<|endoftext|>")
	v.Types = append(v.Types, tokenizer.TypeControl)
	js, err := tokenizer.MarshalHFJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(p, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := hfdir.WriteTokenizerConfig(filepath.Join(dir, "tokenizer_config.json"), tokenizer.HFConfig(v, "", 0)); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeStream writes a data set whose split holds the given tokens, cut into shards of
// shardTokens, and returns its directory.
func writeStream(t testing.TB, vocabSize int, shardTokens int64, train, val []int) string {
	t.Helper()
	dir := t.TempDir()
	m := &Meta{Format: FormatName, Version: Version, Tokenizer: "tokenizer.json", VocabSize: vocabSize,
		DType: DTypeFor(vocabSize), BOSID: 0, EOSID: 0}
	for _, s := range []struct {
		name string
		ids  []int
		dst  *[]Shard
	}{{"train", train, &m.Train}, {"val", val, &m.Val}} {
		w, err := NewShardWriter(dir, s.name, vocabSize, shardTokens)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(s.ids); err != nil {
			t.Fatal(err)
		}
		if *s.dst, err = w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteMeta(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// iota returns n token ids i % mod.
func iota(n, mod int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i % mod
	}
	return ids
}
