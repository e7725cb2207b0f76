package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pagedFixture is one layer's KV pool holding one sequence's nPos positions in shuffled blocks,
// plus the same rows gathered contiguously.
type pagedFixture struct {
	kc, vc     []float32 // pool [numBlocks*blockSize, kvd]
	kg, vg     []float32 // gathered [nPos, kvd]
	table      []int32
	blockSize  int
	nPos, kvd  int
	numBlocks  int
	heads, kvh int
	hd         int
}

func newPagedFixture(r *rand.Rand, nPos, blockSize, heads, kvh, hd int) *pagedFixture {
	f := &pagedFixture{blockSize: blockSize, nPos: nPos, kvd: kvh * hd, heads: heads, kvh: kvh, hd: hd}
	nb := (nPos + blockSize - 1) / blockSize
	f.numBlocks = 2*nb + 3
	f.kc = make([]float32, f.numBlocks*blockSize*f.kvd)
	f.vc = make([]float32, f.numBlocks*blockSize*f.kvd)
	for i := range f.kc {
		f.kc[i] = r.Float32()*4 - 2
		f.vc[i] = r.Float32()*4 - 2
	}
	perm := r.Perm(f.numBlocks)
	for i := 0; i < nb; i++ {
		f.table = append(f.table, int32(perm[i]))
	}
	for p := 0; p < nPos; p++ {
		row := int(f.table[p/blockSize])*blockSize + p%blockSize
		f.kg = append(f.kg, f.kc[row*f.kvd:(row+1)*f.kvd]...)
		f.vg = append(f.vg, f.vc[row*f.kvd:(row+1)*f.kvd]...)
	}
	return f
}

func maxAbsDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func TestPagedAttentionGroupMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, hd := range []int{8, 32, 6} {
		for _, bs := range []int{16, 5, 1} {
			for _, nPos := range []int{1, 4, 15, 16, 17, 63, 64, 65, 130} {
				const heads, kvh = 8, 2
				g := heads / kvh
				f := newPagedFixture(r, nPos, bs, heads, kvh, hd)
				q := make([]float32, g*hd)
				for i := range q {
					q[i] = r.Float32()*2 - 1
				}
				for kv := 0; kv < kvh; kv++ {
					off := kv * hd
					got := make([]float32, g*hd)
					PagedAttentionGroup(got, q, g, f.kc[off:], f.vc[off:], f.table, bs, nPos, f.kvd, hd, make([]float32, AttentionScratch(g)))
					want := make([]float32, g*hd)
					pagedAttentionRef(want, q, g, f.kc[off:], f.vc[off:], f.table, bs, nPos, f.kvd, hd)
					if d := maxAbsDiff(got, want); d > 2e-5 {
						t.Errorf("hd %d bs %d nPos %d kv %d: max |paged - reference| = %g", hd, bs, nPos, kv, d)
					}
					flat := make([]float32, g*hd)
					AttentionGroup(flat, q, f.kg[off:], f.vg[off:], g, nPos, f.kvd, hd, make([]float32, AttentionScratch(g)))
					if d := maxAbsDiff(got, flat); d > 2e-5 {
						t.Errorf("hd %d bs %d nPos %d kv %d: max |paged - contiguous| = %g", hd, bs, nPos, kv, d)
					}
				}
			}
		}
	}
}

// TestPagedAttentionBatchInvariant checks that a row's output is bit-identical whether it runs
// alone, in its sequence's tile of consecutive rows, or in a batch with other sequences' rows,
// on one worker or two, and wherever its blocks sit in the pool.
func TestPagedAttentionBatchInvariant(t *testing.T) {
	defer func(z bool) { useAVX512 = z }(useAVX512)
	for _, z := range avx512Modes() {
		useAVX512 = z
		for _, hd := range []int{16, 64} {
			testPagedAttentionBatchInvariant(t, hd)
		}
	}
}

func testPagedAttentionBatchInvariant(t *testing.T, hd int) {
	r := rand.New(rand.NewPCG(3, 4))
	const heads, kvh, bs = 6, 2, 4
	qd := heads * hd
	type seq struct {
		f    *pagedFixture
		rows []PagedRow
		q    []float32
	}
	var seqs []seq
	for _, n := range []int{1, 9, 33, 70} {
		f := newPagedFixture(r, n, bs, heads, kvh, hd)
		s := seq{f: f}
		for p := max(0, n-5); p < n; p++ {
			s.rows = append(s.rows, PagedRow{Pos: p, Table: f.table})
		}
		s.q = make([]float32, len(s.rows)*qd)
		for i := range s.q {
			s.q[i] = r.Float32()*2 - 1
		}
		seqs = append(seqs, s)
	}
	// A shared pool holding every sequence, at different block ids than in its own fixture.
	total := 0
	for _, s := range seqs {
		total += s.f.numBlocks
	}
	kc := make([]float32, total*bs*hd*kvh)
	vc := make([]float32, len(kc))
	var rows []PagedRow
	var q []float32
	base := 0
	for _, s := range seqs {
		copy(kc[base*bs*s.f.kvd:], s.f.kc)
		copy(vc[base*bs*s.f.kvd:], s.f.vc)
		table := make([]int32, len(s.f.table))
		for i, b := range s.f.table {
			table[i] = b + int32(base)
		}
		for _, row := range s.rows {
			rows = append(rows, PagedRow{Pos: row.Pos, Table: table})
		}
		q = append(q, s.q...)
		base += s.f.numBlocks
	}
	var pa PagedAttention
	for _, p := range []*Pool{Serial, NewPool(2)} {
		batch := make([]float32, len(rows)*qd)
		if err := pa.Run(p, batch, q, kc, vc, rows, heads, kvh, hd, bs); err != nil {
			t.Fatal(err)
		}
		off := 0
		for si, s := range seqs {
			alone := make([]float32, len(s.rows)*qd)
			if err := pa.Run(p, alone, s.q, s.f.kc, s.f.vc, s.rows, heads, kvh, hd, bs); err != nil {
				t.Fatal(err)
			}
			for i := range alone {
				if alone[i] != batch[off+i] {
					t.Fatalf("workers %d seq %d: value %d differs alone (%v) and batched (%v)", p.Workers(), si, i, alone[i], batch[off+i])
				}
			}
			// Each row on its own (a decode step) equals the row inside its prefill tile.
			for ri, row := range s.rows {
				one := make([]float32, qd)
				if err := pa.Run(p, one, s.q[ri*qd:(ri+1)*qd], s.f.kc, s.f.vc, []PagedRow{row}, heads, kvh, hd, bs); err != nil {
					t.Fatal(err)
				}
				for i := range one {
					if one[i] != alone[ri*qd+i] {
						t.Fatalf("avx512 %v hd %d workers %d seq %d row %d: value %d differs as one row (%v) and in its tile (%v)", useAVX512, hd, p.Workers(), si, ri, i, one[i], alone[ri*qd+i])
					}
				}
			}
			off += len(alone)
		}
	}
}

func TestPagedAttentionErrors(t *testing.T) {
	var pa PagedAttention
	kc := make([]float32, 4*2*8)
	out := make([]float32, 16)
	if err := pa.Run(Serial, out, out, kc, kc, []PagedRow{{Pos: 2, Table: []int32{0}}}, 2, 1, 8, 2); err == nil {
		t.Error("short table accepted")
	}
	if err := pa.Run(Serial, out, out, kc, kc, []PagedRow{{Pos: 0, Table: []int32{4}}}, 2, 1, 8, 2); err == nil {
		t.Error("block outside the pool accepted")
	}
}

// TestPagedAttentionTilesMatchReference runs prefill chunks (consecutive rows, so Run groups
// them into tiles) across page and attention-block boundaries and compares every row with the
// float64 reference: tiles whose score rows are one token's heads (g >= rows) and one head of
// every token (g < rows), head dims that take the GEMM micro-kernels (16, 64) and that do not (24).
func TestPagedAttentionTilesMatchReference(t *testing.T) {
	defer func(z bool) { useAVX512 = z }(useAVX512)
	for _, z := range avx512Modes() {
		useAVX512 = z
		testPagedAttentionTiles(t)
	}
}

func testPagedAttentionTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct{ heads, kvh, hd, bs, nPos, chunk int }{
		{3, 3, 16, 16, 80, 20},  // sg 1: tiles of 16 rows, crossing position 64
		{4, 2, 64, 5, 70, 11},   // sg 2: tiles of 8 rows, pages of 5
		{8, 2, 16, 7, 40, 9},    // sg 4: tiles of 4 rows
		{16, 2, 64, 16, 90, 5},  // sg 8: tiles of 2 rows, score and value rows are heads
		{2, 1, 128, 64, 70, 13}, // hd 128: two 64-column passes of the value kernel
		{6, 2, 24, 4, 33, 6},    // hd 24: Dot scores
	} {
		f := newPagedFixture(r, c.nPos, c.bs, c.heads, c.kvh, c.hd)
		qd := c.heads * c.hd
		var rows []PagedRow
		for p := c.nPos - c.chunk; p < c.nPos; p++ {
			rows = append(rows, PagedRow{Pos: p, Table: f.table})
		}
		q := make([]float32, len(rows)*qd)
		for i := range q {
			q[i] = r.Float32()*2 - 1
		}
		out := make([]float32, len(q))
		var pa PagedAttention
		if err := pa.Run(NewPool(2), out, q, f.kc, f.vc, rows, c.heads, c.kvh, c.hd, c.bs); err != nil {
			t.Fatal(err)
		}
		g := c.heads / c.kvh
		for i, row := range rows {
			for kv := 0; kv < c.kvh; kv++ {
				o := i*qd + kv*g*c.hd
				want := make([]float32, g*c.hd)
				pagedAttentionRef(want, q[o:o+g*c.hd], g, f.kc[kv*c.hd:], f.vc[kv*c.hd:], f.table, c.bs, row.Pos+1, f.kvd, c.hd)
				if d := maxAbsDiff(out[o:o+g*c.hd], want); d > 2e-5 {
					t.Errorf("%+v: row %d (pos %d) kv %d: max |tiled - reference| = %g", c, i, row.Pos, kv, d)
				}
			}
		}
	}
}

// BenchmarkPagedAttentionPrefill is one layer's attention of a 512-token prefill (as pp512 runs
// it: one block of 512 positions) for stories110M (12 heads of 64) and TinyLlama (32 query
// heads over 4 KV heads of 64), on 2 workers; GFLOP/s counts 4*hd per (query head, visible key).
func BenchmarkPagedAttentionPrefill(b *testing.B) {
	for _, c := range []struct {
		name           string
		heads, kvh, hd int
	}{{"stories110M", 12, 12, 64}, {"TinyLlama", 32, 4, 64}} {
		b.Run(c.name, func(b *testing.B) {
			const n = 512
			r := rand.New(rand.NewPCG(1, 2))
			f := newPagedFixture(r, n, n, c.heads, c.kvh, c.hd)
			rows := make([]PagedRow, n)
			for i := range rows {
				rows[i] = PagedRow{Pos: i, Table: f.table}
			}
			q := make([]float32, n*c.heads*c.hd)
			for i := range q {
				q[i] = r.Float32()*2 - 1
			}
			out := make([]float32, len(q))
			p := NewPool(2)
			var pa PagedAttention
			for b.Loop() {
				if err := pa.Run(p, out, q, f.kc, f.vc, rows, c.heads, c.kvh, c.hd, n); err != nil {
					b.Fatal(err)
				}
			}
			flops := 4 * float64(c.hd*c.heads) * float64(n*(n+1)/2)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
