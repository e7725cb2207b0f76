// This file implements paged attention: causal grouped-query attention whose keys and values
// live in a pool of fixed-size blocks, found through each sequence's block table (position p is
// slot p%blockSize of block table[p/blockSize]). It runs the online softmax of AttentionGroup
// over chunks of AttnBlock positions assembled from pages, with the query heads that share a
// KV head processed together; a row whose positions all sit in its first block runs
// AttentionGroup itself (so a one-block cache, as Model.Forward uses, is exactly the flash
// kernel). A chunk is cut at page boundaries for the dot-product kernels, and those boundaries
// depend only on positions, so a row's result never depends on where its blocks sit in the
// pool or on which other sequences share the batch (batch invariance).
package kernels

import (
	"fmt"
	"math"
)

// PagedAttentionGroup computes out_j = softmax(q_j·Kᵀ/sqrt(headDim)) · V for the g query heads
// q_j that share one KV head, over positions 0..nPos-1 read through table.
// q and out are [g, headDim]; kc and vc start at the KV head's offset inside one layer's pool
// of rows of stride elements (pool row r = block*blockSize + slot; its key is
// kc[r*stride : r*stride+headDim]); table holds at least ceil(nPos/blockSize) block ids;
// scratch needs AttentionScratch(g) values.
func PagedAttentionGroup(out, q []float32, g int, kc, vc []float32, table []int32, blockSize, nPos, stride, headDim int, scratch []float32) {
	pagedAttentionTile(out, q, 0, 1, g, nPos-1, &kvSrc{f32: kc}, &kvSrc{f32: vc}, table, blockSize, stride, headDim, scratch)
}

// pagedAttentionTile is PagedAttentionGroup for nt consecutive query tokens of one sequence at
// positions pos0..pos0+nt-1 (token t attends to 0..pos0+t): token t's g heads are
// q[t*ldq : t*ldq+g*headDim] and likewise out. Every K/V block is read once for the whole
// tile, and scores come from the GEMM micro-kernels (attnScores), whose per-score order does
// not depend on the tile, so each token's result is exactly what it gets alone.
// scratch needs AttentionScratch(nt*g) values.
// kc and vc are the f32 pools or the quantized ones (kvsrc.go), whose segments are dequantized
// into a small scratch before the same kernels run on them.
func pagedAttentionTile(out, q []float32, ldq, nt, g, pos0 int, kc, vc *kvSrc, table []int32, blockSize, stride, headDim int, scratch []float32) {
	nr := nt * g // (token, head) pairs; pair t*g+j has scores s[(t*g+j)*B:]
	B := AttnBlock
	t := attnTile{out: out, q: q, ldq: ldq, nt: nt, g: g, pos0: pos0, table: table,
		blockSize: blockSize, stride: stride, headDim: headDim,
		mx: scratch[nr*B : nr*B+nr], sum: scratch[nr*B+nr : nr*B+2*nr]}
	t.begin()
	for p0 := 0; p0 < pos0+nt; p0 += B {
		t.chunk(p0, scratch[:nr*B:nr*B], kc, vc)
	}
	t.end()
}

// attnTile is one work item of paged attention (pagedAttentionTile's arguments) with its
// online-softmax state, so that a worker can run several items chunk by chunk, interleaved
// (pagedArgs.run): begin, then chunk for p0 = 0, AttnBlock, ... below pos0+nt, then end.
// The K and V pools are chunk's arguments.
type attnTile struct {
	out, q                     []float32
	ldq, nt, g, pos0           int
	kc, vc                     *kvSrc
	table                      []int32
	blockSize, stride, headDim int
	mx, sum                    []float32 // nt*g each: running maximum and sum
}

// begin resets the running maxima and sums and the output rows.
func (a *attnTile) begin() {
	for i := range a.mx {
		a.mx[i] = float32(math.Inf(-1))
		a.sum[i] = 0
	}
	for t := 0; t < a.nt; t++ {
		clear(a.out[t*a.ldq : t*a.ldq+a.g*a.headDim])
	}
}

// chunk runs positions p0..p0+AttnBlock-1 (those the tile sees) over the K and V pools kc,
// vc: their scores into s (nt*g*AttnBlock values, free after the call), the online softmax
// and the weighted values. (The pools are arguments, not fields, so that they stay on the
// caller's stack: the kernels leak what a's slices point to.)
func (a *attnTile) chunk(p0 int, s []float32, kc, vc *kvSrc) {
	const B = AttnBlock
	out, q, ldq, nt, g, pos0 := a.out, a.q, a.ldq, a.nt, a.g, a.pos0
	table, blockSize, stride, headDim, mx, sum := a.table, a.blockSize, a.stride, a.headDim, a.mx, a.sum
	scale := float32(1 / math.Sqrt(float64(headDim)))
	fast := attnAsm && !Reference && headDim%8 == 0
	nPos := pos0 + nt // positions the tile's last token sees
	nb := min(B, nPos-p0)
	// Scores, page segment by page segment.
	for i0 := 0; i0 < nb; {
		p := p0 + i0
		seg := min(nb-i0, blockSize-p%blockSize)
		r0 := int(table[p/blockSize])*blockSize + p%blockSize
		kp, ks := kc.seg(r0, seg, stride, headDim)
		if g >= nt { // rows: the heads of one token
			for t := 0; t < nt; t++ {
				attnScores(s[t*g*B+i0:], B, q[t*ldq:], headDim, g, kp, ks, seg, headDim, scale)
			}
		} else { // rows: one head of every token
			for j := 0; j < g; j++ {
				attnScores(s[j*B+i0:], g*B, q[j*headDim:], ldq, nt, kp, ks, seg, headDim, scale)
			}
		}
		i0 += seg
	}
	for t := 0; t < nt; t++ {
		if nbt := min(nb, pos0+t+1-p0); nbt > 0 {
			onlineSoftmax(s[t*g*B:], B, nbt, g, headDim, mx[t*g:], sum[t*g:], out[t*ldq:], fast)
		}
	}
	// Weighted values, page segment by page segment.
	for i0 := 0; i0 < nb; {
		p := p0 + i0
		seg := min(nb-i0, blockSize-p%blockSize)
		r0 := int(table[p/blockSize])*blockSize + p%blockSize
		vp, vs := vc.seg(r0, seg, stride, headDim)
		n0 := pos0 + 1 - p0 - i0 // values token 0 sees in the segment (token t: n0+t)
		if g >= nt {
			for t := 0; t < nt; t++ {
				attnPVRows(out[t*ldq:], headDim, s[t*g*B+i0:], B, g, vp, vs, headDim, seg, n0+t, 0, fast)
			}
		} else {
			for j := 0; j < g; j++ {
				attnPVRows(out[j*headDim:], ldq, s[j*B+i0:], g*B, nt, vp, vs, headDim, seg, n0, 1, fast)
			}
		}
		i0 += seg
	}
}

// end divides each output row by its softmax sum.
func (a *attnTile) end() {
	for t := 0; t < a.nt; t++ {
		for j := 0; j < a.g; j++ {
			if sm := a.sum[t*a.g+j]; sm > 0 {
				Scale(a.out[t*a.ldq+j*a.headDim:t*a.ldq+(j+1)*a.headDim], 1/sm)
			}
		}
	}
}

// attnPVRows adds Σ_{i < n_r} p_r[i] · v_i to output row r < rows (out[r*ldo : r*ldo+hd],
// p_r = p[r*ldp:], v_i = v[i*stride : i*stride+hd]) where n_r = min(seg, n0 + r*step) keys
// (nondecreasing in r). With AVX-512 and hd % 64 == 0, groups of up to 6 rows share each load
// of v over the group's common keys; every output element is the same chain of FMAs over the
// keys in order as attnPV alone gives it, so results do not depend on the grouping.
func attnPVRows(out []float32, ldo int, p []float32, ldp, rows int, v []float32, stride, hd, seg, n0, step int, fast bool) {
	for r0 := 0; r0 < rows; r0 += 6 {
		rr := min(6, rows-r0)
		common := 0
		if fast && useAVX512 && hd%64 == 0 {
			if common = max(0, min(seg, n0+r0*step)); common > 0 {
				for c0 := 0; c0 < hd; c0 += 64 {
					attnPVZKernels[rr](&out[r0*ldo+c0], 4*ldo, &p[r0*ldp], 4*ldp, &v[c0], 4*stride, common)
				}
			}
		}
		for r := r0; r < r0+rr; r++ {
			n := min(seg, n0+r*step)
			if n <= common {
				continue
			}
			o := out[r*ldo : r*ldo+hd]
			if fast {
				attnPV(&o[0], &p[r*ldp+common], &v[common*stride], stride, hd, n-common)
				continue
			}
			for i := common; i < n; i++ {
				Axpy(o, p[r*ldp+i], v[i*stride:i*stride+hd])
			}
		}
	}
}

// pagedAttentionRef is the plain reference: for each head, every score, a full softmax, then
// the weighted sum of values, all in float64.
func pagedAttentionRef(out, q []float32, g int, kc, vc []float32, table []int32, blockSize, nPos, stride, headDim int) {
	row := func(p int) int { return int(table[p/blockSize])*blockSize + p%blockSize }
	scale := 1 / math.Sqrt(float64(headDim))
	sc := make([]float64, nPos)
	for j := 0; j < g; j++ {
		qj := q[j*headDim : (j+1)*headDim]
		mx := math.Inf(-1)
		for p := range sc {
			kr := kc[row(p)*stride:]
			var d float64
			for i := range qj {
				d += float64(qj[i]) * float64(kr[i])
			}
			sc[p] = d * scale
			mx = max(mx, sc[p])
		}
		var t float64
		for p := range sc {
			sc[p] = math.Exp(sc[p] - mx)
			t += sc[p]
		}
		for i := 0; i < headDim; i++ {
			var o float64
			for p := range sc {
				o += sc[p] * float64(vc[row(p)*stride+i])
			}
			out[j*headDim+i] = float32(o / t)
		}
	}
}

// PagedRow is one query row of a paged-attention batch: it sits at position Pos of the
// sequence whose block table is Table, and attends to positions 0..Pos.
type PagedRow struct {
	Pos   int
	Table []int32
}

// PagedAttention runs causal GQA paged attention for a ragged batch of query rows (rows of
// different sequences, each with its own table), splitting (tile, KV head, sub-group) work
// items across the pool; a tile is a run of consecutive rows of one sequence at consecutive
// positions (a prefill chunk), which reads each K/V block once for all its rows. The keys and
// values of every row's own position must already be in the pool. The zero value is ready; it
// must not be used concurrently.
type PagedAttention struct {
	a     pagedArgs
	fn    func(lo, hi int)
	rowFn func(lo, hi int) // a.runRows, bound once
	dyn   dynItems         // batches of several rows: items taken one at a time (pool_dynamic.go)
}

// pagedTile is rows [first, first+n) of a batch.
type pagedTile struct{ first, n int }

type pagedArgs struct {
	out, q                                       []float32
	kv                                           KVLayer
	rows                                         []PagedRow
	tiles                                        []pagedTile // kept across calls
	heads, kvHeads, headDim, blockSize, nsub, sg int
}

// Run computes out ([len(rows), heads*headDim]) from q (same shape) and one layer's pool kc,
// vc ([numBlocks*blockSize, kvHeads*headDim]). Query head h reads KV head h/(heads/kvHeads).
func (r *PagedAttention) Run(p *Pool, out, q, kc, vc []float32, rows []PagedRow, heads, kvHeads, headDim, blockSize int) error {
	return r.run(p, out, q, KVLayer{K: kc, V: vc}, rows, heads, kvHeads, headDim, blockSize)
}

// run is Run over a layer's pools in any format (kvsrc.go).
func (r *PagedAttention) run(p *Pool, out, q []float32, kv KVLayer, rows []PagedRow, heads, kvHeads, headDim, blockSize int) error {
	if heads%kvHeads != 0 || blockSize <= 0 {
		return fmt.Errorf("paged attention: %d heads over %d KV heads, block size %d", heads, kvHeads, blockSize)
	}
	kvd := kvHeads * headDim
	poolRows, err := kv.poolRows(kvd)
	if err != nil {
		return err
	}
	work := 0
	for i, row := range rows {
		nb := (row.Pos + blockSize) / blockSize
		if row.Pos < 0 || len(row.Table) < nb {
			return fmt.Errorf("paged attention: row %d at position %d has a table of %d blocks", i, row.Pos, len(row.Table))
		}
		for _, b := range row.Table[:nb] {
			if b < 0 || (int(b)+1)*blockSize > poolRows {
				return fmt.Errorf("paged attention: row %d: block %d outside the pool", i, b)
			}
		}
		work += row.Pos + 1
	}
	if r.fn == nil {
		r.fn = r.a.run
	}
	r.a = pagedArgs{out: out, q: q, kv: kv, rows: rows, tiles: r.a.tiles[:0], heads: heads, kvHeads: kvHeads, headDim: headDim, blockSize: blockSize}
	group := heads / kvHeads
	nsub := 1
	for nsub < group && (group%nsub != 0 || group/nsub > attnMaxGroup || len(rows)*kvHeads*nsub < p.Workers()) {
		nsub++
	}
	for group%nsub != 0 {
		nsub++
	}
	r.a.nsub, r.a.sg = nsub, group/nsub
	// Tiles of up to attnMaxGroup/sg rows (the scratch holds attnMaxGroup score rows).
	maxRows := max(1, attnMaxGroup/r.a.sg)
	for i := 0; i < len(rows); {
		n := 1
		for i+n < len(rows) && n < maxRows && sameSeqNext(rows[i+n-1], rows[i+n]) {
			n++
		}
		r.a.tiles = append(r.a.tiles, pagedTile{i, n})
		i += n
	}
	items := len(r.a.tiles) * kvHeads * nsub
	switch {
	case p.Workers() == 1 || work*heads*headDim < 1<<15 || len(rows) == 1 && r.a.narrowRowsZ():
		r.a.run(0, items)
	case len(rows) > 1 && decodeOnly(r.a.tiles) && len(r.a.tiles) >= p.Workers():
		// A batch of decode rows: a row's items at a time, interleaved (runRows).
		if r.rowFn == nil {
			r.rowFn = r.a.runRows
		}
		r.dyn.For(p, len(r.a.tiles), r.rowFn)
	case len(rows) > 1:
		r.dyn.For(p, items, r.fn)
	default:
		p.For(items, 1, r.fn)
	}
	r.a = pagedArgs{tiles: r.a.tiles}
	return nil
}

// sameSeqNext reports whether row b is the position after row a in the same sequence.
func sameSeqNext(a, b PagedRow) bool {
	return b.Pos == a.Pos+1 && len(a.Table) == len(b.Table) && len(a.Table) > 0 && &a.Table[0] == &b.Table[0]
}

// run processes work items [lo, hi). Item t covers tile order(t / perTile), tiles taken
// alternately from both ends of the batch so contiguous item ranges get balanced causal work.
func (a *pagedArgs) run(lo, hi int) {
	// Scratch from attention_flash.go's pool (the float kernels' assembly is not noescape,
	// so a stack array would move to the heap on every call).
	bp := attnScratch.Get().(*[attnScratchLen]float32)
	defer attnScratch.Put(bp)
	buf := bp
	var ks, vs kvSrc // the K and V pools, with one segment's scratch when quantized
	var qbuf []float32
	if a.kv.quantized() {
		sp := getKVScratch(min(AttnBlock, a.blockSize) * a.headDim)
		defer kvScratch.Put(sp)
		qbuf = *sp
		ks.buf, vs.buf = qbuf, qbuf // a K segment is used up before any V segment is loaded
	}
	perTile := a.kvHeads * a.nsub
	qd, kvd, hd := a.heads*a.headDim, a.kvHeads*a.headDim, a.headDim
	group := a.heads / a.kvHeads
	for it := lo; it < hi; it++ {
		t, r := it/perTile, it%perTile
		i := a.tileAt(t)
		if m := a.decodeRun(i, it, hi); m > 0 {
			a.runInterleaved(i, r, m, buf[:], qbuf)
			it += m - 1
			continue
		}
		kv, sub := r/a.nsub, r%a.nsub
		h0 := kv*group + sub*a.sg
		off := kv * hd
		tl := a.tiles[i]
		qo := tl.first*qd + h0*hd
		end := qo + (tl.n-1)*qd + a.sg*hd
		row := a.rows[tl.first]
		ks.at(a.kv.K, a.kv.KQ, a.kv.Fmt, off)
		vs.at(a.kv.V, a.kv.VQ, a.kv.Fmt, off)
		pagedAttentionTile(a.out[qo:end], a.q[qo:end], qd, tl.n, a.sg, row.Pos, &ks, &vs,
			row.Table, a.blockSize, kvd, hd, buf[:])
	}
}
