// Tests of the KV sizing helpers: a model's context length never exceeds the pool that
// serves it.
package engine

import "testing"

func TestDefaultMaxModelLen(t *testing.T) {
	for _, tc := range []struct{ ctx, blocks, bs, want int }{
		{2048, 1024, 16, 2048},
		{0, 1024, 16, 4096},
		{10_000_000, 1024, 16, 16384},
		{1<<32 - 1, 8, 16, 128},
		{2_000_000_000, 0, 16, 2_000_000_000}, // no pool: nothing to cap by (the scheduler refuses it)
	} {
		if got := DefaultMaxModelLen(tc.ctx, tc.blocks, tc.bs); got != tc.want {
			t.Errorf("DefaultMaxModelLen(%d, %d, %d) = %d, want %d", tc.ctx, tc.blocks, tc.bs, got, tc.want)
		}
	}
	for _, tc := range []struct{ n, bs, max, want int }{
		{1, 16, 0, 1}, {16, 16, 0, 1}, {17, 16, 0, 2}, {1 << 32, 16, 100, 100}, {0, 16, 0, 0}, {5, 0, 0, 0},
	} {
		if got := BlocksForLength(tc.n, tc.bs, tc.max); got != tc.want {
			t.Errorf("BlocksForLength(%d, %d, %d) = %d, want %d", tc.n, tc.bs, tc.max, got, tc.want)
		}
	}
}
