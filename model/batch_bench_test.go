// Batched-decode benchmarks on $LLMCLOUD_BENCH_MODEL (see perf_bench_test.go).
package model

import (
	"fmt"
	"testing"
)

// BenchmarkDecodeForward is one sequence's decode step at position 128 through Forward.
func BenchmarkDecodeForward(b *testing.B) {
	m := benchModel(b)
	c := m.NewCache(256)
	if _, err := m.Forward(c, make([]int, 128), 0, false); err != nil {
		b.Fatal(err)
	}
	var dst []float32
	for b.Loop() {
		var err error
		if dst, err = m.ForwardTo(dst, c, []int{5}, 128, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeBatch is a decode step of seqs sequences at position 128 through
// ForwardBatch (one row each, logits for all), in Invariant mode or not.
func BenchmarkDecodeBatch(b *testing.B) {
	for _, inv := range []bool{false, true} {
		for _, seqs := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("invariant=%v/seqs=%d", inv, seqs), func(b *testing.B) {
				m := benchModel(b)
				const bs = 16
				kv, err := m.NewPagedKV(seqs*(129+bs-1)/bs+seqs, bs)
				if err != nil {
					b.Fatal(err)
				}
				batch := &Batch{Invariant: inv}
				var ss []BatchSeq
				for i := 0; i < seqs; i++ {
					var table []int32
					for j := 0; j < (129+bs-1)/bs; j++ {
						table = append(table, int32(i*((129+bs-1)/bs)+j))
					}
					ss = append(ss, BatchSeq{Tokens: make([]int, 128), BlockTable: table, NeedsLogits: true})
				}
				if _, err := m.ForwardBatch(batch, kv, ss); err != nil {
					b.Fatal(err)
				}
				for i := range ss {
					ss[i].Tokens, ss[i].StartPos = []int{5}, 128
				}
				for b.Loop() {
					if _, err := m.ForwardBatch(batch, kv, ss); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(seqs)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}
