// Round-trip fuzzing: Decode(Encode(x)) == x for valid UTF-8 x, and streaming == Decode.
// Run one kind for a while with e.g.
//
//	go test ./tokenizer -run '^$' -fuzz FuzzRoundTrip/ -fuzztime 60s
//
// The seed corpus runs in every plain `go test`.

package tokenizer

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"golang.org/x/text/unicode/norm"
)

var fuzzSeeds = []string{"", " ", "Hello world", "  two  spaces ", "\n\n\t x", "日本語 😀👍🏽",
	"e\u0301", "'s 'LL 123456", "<|endoftext|>", "<s> </s> <unk>", "\x00\x7f", "Ünïcödé  \r\n"}

// fuzzKinds loads one tokenizer per kind; each compares Decode(Encode(x)) with want(x).
func fuzzKinds(t testing.TB) map[string]func(string) (string, string, []int, *Tokenizer) {
	spm := loadTok512(t)
	gd := fixture.Path(t, "models", "gpt2-tokenizer")
	gv, err := VocabFromGPT2Files(filepath.Join(gd, "vocab.json"), filepath.Join(gd, "merges.txt"))
	gpt2 := newTok(t, gv, err)
	qd := fixture.Path(t, "models", "qwen2-tokenizer")
	qv, err := VocabFromGPT2Files(filepath.Join(qd, "vocab.json"), filepath.Join(qd, "merges.txt"))
	qwen := newTok(t, qv, err)
	sv, err := VocabFromHFJSON(filepath.Join("testdata", "spm", "tok512.json"))
	spmJSON := newTok(t, sv, err)
	uv, err := VocabFromHFJSON(filepath.Join("testdata", "spm", "tok512-unigram.json"))
	unigram := newTok(t, uv, err)
	return map[string]func(string) (string, string, []int, *Tokenizer){
		// tok512 as tokenizer.json (merges made from the scores) must give tok512.bin's ids.
		"spm-json": func(x string) (string, string, []int, *Tokenizer) {
			ids := spmJSON.Encode(x, true, false)
			if want := spm.Encode(x, true, false); !equalInts(ids, want) {
				return fmt.Sprintf("ids differ from tok512.bin's %v", want), "", ids, spmJSON
			}
			return spmJSON.Decode(ids), strings.ReplaceAll(x, spmSpace, " "), ids, spmJSON
		},
		"unigram": func(x string) (string, string, []int, *Tokenizer) {
			ids := unigram.Encode(x, true, false)
			return unigram.Decode(ids), strings.ReplaceAll(x, spmSpace, " "), ids, unigram
		},
		// SentencePiece: "▁" in the input reads back as a space (it is SentencePiece's space).
		"spm": func(x string) (string, string, []int, *Tokenizer) {
			ids := spm.Encode(x, true, false)
			return spm.Decode(ids), strings.ReplaceAll(x, spmSpace, " "), ids, spm
		},
		"gpt2": func(x string) (string, string, []int, *Tokenizer) {
			ids := gpt2.Encode(x, false, false)
			return gpt2.Decode(ids), x, ids, gpt2
		},
		// Qwen2 normalizes to NFC before encoding.
		"qwen2": func(x string) (string, string, []int, *Tokenizer) {
			ids := qwen.Encode(x, false, false)
			return qwen.Decode(ids), norm.NFC.String(x), ids, qwen
		},
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	kinds := fuzzKinds(f)
	f.Fuzz(func(t *testing.T, x string) {
		if !utf8.ValidString(x) {
			t.Skip()
		}
		for name, run := range kinds {
			got, want, ids, tok := run(x)
			if got != want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q (ids %v)", name, x, got, ids)
			}
			checkStreaming(t, tok, ids)
		}
	})
}
