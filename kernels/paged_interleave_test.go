package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestPagedDecodeInterleaved checks that decode rows, whose KV heads a worker runs
// interleaved chunk by chunk (paged_interleave.go), give bit for bit what each KV head's
// group gets run alone by pagedAttentionTile, for 1 to 3 workers, one row and a batch of rows,
// contexts of one to several chunks, with the prefetch on and off, and with chunkRowsZ's
// kernels (where the CPU has them) on and off (chunkRowMajor).
func TestPagedDecodeInterleaved(t *testing.T) {
	defer func(v bool) { useAVX512 = v }(useAVX512)
	for _, z := range avx512Modes() {
		useAVX512 = z
		testPagedDecodeInterleaved(t)
	}
}

func testPagedDecodeInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	defer func(v, z bool) { prefetchKV, useRowsZ = v, z }(prefetchKV, useRowsZ)
	for _, c := range []struct{ heads, kvh, hd, bs int }{
		{12, 12, 64, 16}, {32, 4, 64, 16}, {8, 2, 8, 5}, {4, 1, 32, 16}, {16, 1, 8, 3}, {6, 3, 16, 1},
		{6, 6, 128, 16}, {16, 2, 128, 7}, {5, 5, 64, 4}, {24, 3, 64, 16}, {16, 8, 128, 16}, {6, 3, 64, 5},
	} {
		for _, nPos := range []int{1, 17, 64, 65, 200} {
			f := newPagedFixture(r, nPos, c.bs, c.heads, c.kvh, c.hd)
			qd, g := c.heads*c.hd, c.heads/c.kvh
			// Rows: positions nPos-1, nPos/2 and 0 of the same cache (a batch of three
			// sequences sharing blocks, as prefix caching makes them).
			all := []PagedRow{{Pos: nPos - 1, Table: f.table}, {Pos: nPos / 2, Table: f.table}, {Pos: 0, Table: f.table}}
			q := make([]float32, len(all)*qd)
			for i := range q {
				q[i] = r.Float32()*2 - 1
			}
			want := make([]float32, len(q))
			scratch := make([]float32, AttentionScratch(g))
			for i, row := range all {
				for kv := 0; kv < c.kvh; kv++ {
					o := i*qd + kv*g*c.hd
					ks, vs := &kvSrc{f32: f.kc[kv*c.hd:]}, &kvSrc{f32: f.vc[kv*c.hd:]}
					pagedAttentionTile(want[o:o+g*c.hd], q[o:o+g*c.hd], qd, 1, g, row.Pos, ks, vs, f.table, c.bs, f.kvd, c.hd, scratch)
				}
			}
			for _, workers := range []int{1, 2, 3} {
				p := NewPool(workers)
				for mode := range 4 {
					pf := mode&1 == 0
					prefetchKV, useRowsZ = pf, mode < 2
					for _, n := range []int{1, 3} {
						rows := all[:n]
						out := make([]float32, n*qd)
						var pa PagedAttention
						if err := pa.Run(p, out, q[:n*qd], f.kc, f.vc, rows, c.heads, c.kvh, c.hd, c.bs); err != nil {
							t.Fatal(err)
						}
						for i := range out {
							if out[i] != want[i] {
								t.Fatalf("AVX-512 %v, %+v nPos %d, %d workers, prefetch %v, position-major kernels %v, %d rows: out[%d] = %g, alone %g", useAVX512, c, nPos, workers, pf, useRowsZ, n, i, out[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
