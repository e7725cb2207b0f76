// Benchmarks: Loader.Next on a uint16 split (tokens/s a trainer can be fed at) and Prepare on
// the Brown corpus with the default model's tokenizer (recipes/default; the corpus is optional
// large data in ../shared).
package data

import (
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/internal/shared"
)

func BenchmarkLoaderNext(b *testing.B) {
	const B, T = 16, 256
	d, err := Open(writeStream(b, 4096, 1<<20, iota(1<<21, 4096), iota(10, 4096)), "train")
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	l, err := NewLoader(d, B, T, 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	x, y := make([]int32, B*T), make([]int32, B*T)
	b.SetBytes(B * T * 2)
	for b.Loop() {
		l.Next(x, y)
	}
}

func BenchmarkPrepareBrown(b *testing.B) {
	brown := shared.Path(b, "data", "brown")
	in := filepath.Join(brown, "train.txt")
	var tokens int64
	for b.Loop() {
		st, err := Prepare(PrepareOptions{Tokenizer: "../recipes/default", Input: in,
			ValInput: filepath.Join(brown, "val.txt"), OutDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		tokens = st.TrainTokens + st.ValTokens
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
