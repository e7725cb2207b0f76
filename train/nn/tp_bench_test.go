// This file benchmarks the vocab-parallel cross-entropy against the one-process one on the
// same local width (a one-rank group, so the reductions cost nothing): the cost of the
// layer's own arithmetic.
package nn

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkCrossEntropy(b *testing.B) {
	const N, V = 256, 4096
	r := rand.New(rand.NewPCG(1, 1))
	logits := randF32(r, N*V, 3)
	targets := randTokens(r, N, V)
	probs, losses := make([]float32, N*V), make([]float32, N)
	b.Run("one-process", func(b *testing.B) {
		for b.Loop() {
			crossEntropyForward(testPool, losses, probs, logits, targets, N, V)
		}
	})
	b.Run("vocab-parallel", func(b *testing.B) {
		s := newTPState(memRank{newMemGroup(1), 0}, V, N)
		for b.Loop() {
			s.crossEntropyForward(testPool, losses, probs, logits, targets, N, V)
		}
	})
}
