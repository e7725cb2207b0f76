// Decode-speed benchmarks on the shared models (tokens/s reported as a custom metric).
package model

import (
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/kernels"
)

func benchDecode(b *testing.B, pool *kernels.Pool, path ...string) {
	p := fixture.Path(b, path...)
	var m *Model
	var err error
	if p[len(p)-4:] == ".bin" {
		m, err = LoadLlama2C(p)
	} else {
		m, err = OpenGGUF(p)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	m.Pool = pool
	const ctx = 128
	c := m.NewCache(ctx)
	tok := 1
	n := 0
	for b.Loop() {
		if c.Len == ctx {
			c.Len = 0
		}
		logits, err := m.Decode(c, tok)
		if err != nil {
			b.Fatal(err)
		}
		tok = argmax(logits)
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tok/s")
}

func BenchmarkDecodeRand3MQ8_0(b *testing.B) {
	benchDecode(b, nil, "models", "rand3M", "rand3M-q8_0.gguf")
}

func BenchmarkDecodeRand3MQ8_0Serial(b *testing.B) {
	benchDecode(b, kernels.Serial, "models", "rand3M", "rand3M-q8_0.gguf")
}

func BenchmarkDecodeStories260K(b *testing.B) {
	benchDecode(b, nil, "models", "stories260K", "stories260K.bin")
}

func BenchmarkDecodeStories260KSerial(b *testing.B) {
	benchDecode(b, kernels.Serial, "models", "stories260K", "stories260K.bin")
}
