// Benchmarks for profiling the forward pass on a large model file named by
// LLMCLOUD_BENCH_MODEL (e.g. a stories110M- or TinyLlama-shaped GGUF from `llmcloud synth`):
//
//	LLMCLOUD_BENCH_MODEL=/tmp/m.gguf go test ./model -run X -bench Forward -cpuprofile cpu.out
package model

import (
	"os"
	"strconv"
	"testing"
)

func benchModel(b *testing.B) *Model {
	p := os.Getenv("LLMCLOUD_BENCH_MODEL")
	if p == "" {
		b.Skip("LLMCLOUD_BENCH_MODEL not set")
	}
	m, err := OpenGGUF(p)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// BenchmarkForwardDecode decodes tokens at positions 0..127 repeatedly (tg128's work).
func BenchmarkForwardDecode(b *testing.B) {
	m := benchModel(b)
	c := m.NewCache(128)
	var logits []float32
	tok := []int{1}
	n := 0
	var err error
	for b.Loop() {
		if c.Len == 128 {
			c.Len = 0
		}
		if logits, err = m.ForwardTo(logits, c, tok, c.Len, false); err != nil {
			b.Fatal(err)
		}
		tok[0] = argmax(logits)
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkForwardPrefill runs one 512-token batch from an empty cache (pp512).
func BenchmarkForwardPrefill(b *testing.B) {
	m := benchModel(b)
	n := 512
	if s := os.Getenv("LLMCLOUD_BENCH_PP"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	c := m.NewCache(n)
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (i*7919 + 13) % m.Config.Vocab
	}
	var logits []float32
	var err error
	runs := 0
	for b.Loop() {
		if logits, err = m.ForwardTo(logits, c, ids, 0, false); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(runs*n)/b.Elapsed().Seconds(), "tok/s")
}
