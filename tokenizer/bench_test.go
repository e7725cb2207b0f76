// Encode throughput on testdata/data/brown/val.txt (600 kB of English prose) for the
// SentencePiece and byte-level BPE paths; b.SetBytes makes `go test -bench` print MB/s.

package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func brownVal(b *testing.B) string {
	data, err := os.ReadFile(fixture.Path(b, "data", "brown", "val.txt"))
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

func benchEncode(b *testing.B, tok *Tokenizer, text string) {
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	n := 0
	for b.Loop() {
		n = len(tok.Encode(text, true, false))
	}
	b.ReportMetric(float64(n), "tokens")
}

func BenchmarkEncodeSPMTok512(b *testing.B) { benchEncode(b, loadTok512(b), brownVal(b)) }

func BenchmarkEncodeSPMLlama2(b *testing.B) {
	v, err := VocabFromLlama2C(fixture.Path(b, "models", "llama2-tokenizer", "tokenizer.bin"), 32000)
	benchEncode(b, newTok(b, v, err), brownVal(b))
}

func BenchmarkEncodeBPEGPT2(b *testing.B) {
	d := fixture.Path(b, "models", "gpt2-tokenizer")
	v, err := VocabFromGPT2Files(filepath.Join(d, "vocab.json"), filepath.Join(d, "merges.txt"))
	benchEncode(b, newTok(b, v, err), brownVal(b))
}

func BenchmarkEncodeBPEQwen2(b *testing.B) {
	d := fixture.Path(b, "models", "qwen2-tokenizer")
	v, err := VocabFromGPT2Files(filepath.Join(d, "vocab.json"), filepath.Join(d, "merges.txt"))
	benchEncode(b, newTok(b, v, err), brownVal(b))
}

func BenchmarkDecodeBPEGPT2(b *testing.B) {
	d := fixture.Path(b, "models", "gpt2-tokenizer")
	v, err := VocabFromGPT2Files(filepath.Join(d, "vocab.json"), filepath.Join(d, "merges.txt"))
	tok := newTok(b, v, err)
	text := brownVal(b)
	ids := tok.Encode(text, false, false)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = tok.Decode(ids)
	}
}
