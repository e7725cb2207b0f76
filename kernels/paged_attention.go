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
	if nPos <= blockSize {
		// All positions in the first block: contiguous rows, the flash kernel itself (which
		// one runs depends on positions only, so batch invariance holds).
		r0 := int(table[0]) * blockSize
		AttentionGroup(out, q, kc[r0*stride:], vc[r0*stride:], g, nPos, stride, headDim, scratch)
		return
	}
	const B = AttnBlock
	scale := float32(1 / math.Sqrt(float64(headDim)))
	s, mx, sum := startOnlineSoftmax(scratch, out, g, headDim)
	fast := attnAsm && !Reference && headDim%8 == 0
	for p0 := 0; p0 < nPos; p0 += B {
		nb := min(B, nPos-p0)
		// Scores, page segment by page segment: each key row is read once for all g heads.
		for i0 := 0; i0 < nb; {
			p := p0 + i0
			seg := min(nb-i0, blockSize-p%blockSize)
			r0 := int(table[p/blockSize])*blockSize + p%blockSize
			kp := kc[r0*stride : (r0+seg-1)*stride+headDim]
			for j := 0; j < g; j++ {
				qj := q[j*headDim : (j+1)*headDim]
				sj := s[j*B+i0 : j*B+i0+seg]
				i := 0
				if fast {
					if n4 := seg &^ 3; n4 > 0 {
						attnScores4(&qj[0], &kp[0], stride, headDim, n4, scale, &sj[0])
						i = n4
					}
				}
				for ; i < seg; i++ {
					sj[i] = Dot(qj, kp[i*stride:i*stride+headDim]) * scale
				}
			}
			i0 += seg
		}
		onlineSoftmax(s, B, nb, g, headDim, mx, sum, out, fast)
		// Weighted values, page segment by page segment.
		for i0 := 0; i0 < nb; {
			p := p0 + i0
			seg := min(nb-i0, blockSize-p%blockSize)
			r0 := int(table[p/blockSize])*blockSize + p%blockSize
			vp := vc[r0*stride : (r0+seg-1)*stride+headDim]
			for j := 0; j < g; j++ {
				oj := out[j*headDim : (j+1)*headDim]
				if fast {
					attnPV(&oj[0], &s[j*B+i0], &vp[0], stride, headDim, seg)
					continue
				}
				for i := 0; i < seg; i++ {
					Axpy(oj, s[j*B+i0+i], vp[i*stride:i*stride+headDim])
				}
			}
			i0 += seg
		}
	}
	for j := 0; j < g; j++ {
		if sum[j] > 0 {
			Scale(out[j*headDim:(j+1)*headDim], 1/sum[j])
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
// different sequences, each with its own table), splitting (row, KV head, sub-group) work
// items across the pool. The keys and values of every row's own position must already be in
// the pool. The zero value is ready; it must not be used concurrently.
type PagedAttention struct {
	a  pagedArgs
	fn func(lo, hi int)
}

type pagedArgs struct {
	out, q, kc, vc                               []float32
	rows                                         []PagedRow
	heads, kvHeads, headDim, blockSize, nsub, sg int
}

// Run computes out ([len(rows), heads*headDim]) from q (same shape) and one layer's pool kc,
// vc ([numBlocks*blockSize, kvHeads*headDim]). Query head h reads KV head h/(heads/kvHeads).
func (r *PagedAttention) Run(p *Pool, out, q, kc, vc []float32, rows []PagedRow, heads, kvHeads, headDim, blockSize int) error {
	if heads%kvHeads != 0 || blockSize <= 0 {
		return fmt.Errorf("paged attention: %d heads over %d KV heads, block size %d", heads, kvHeads, blockSize)
	}
	kvd := kvHeads * headDim
	work := 0
	for i, row := range rows {
		nb := (row.Pos + blockSize) / blockSize
		if row.Pos < 0 || len(row.Table) < nb {
			return fmt.Errorf("paged attention: row %d at position %d has a table of %d blocks", i, row.Pos, len(row.Table))
		}
		for _, b := range row.Table[:nb] {
			if b < 0 || (int(b)+1)*blockSize*kvd > len(kc) || (int(b)+1)*blockSize*kvd > len(vc) {
				return fmt.Errorf("paged attention: row %d: block %d outside the pool", i, b)
			}
		}
		work += row.Pos + 1
	}
	if r.fn == nil {
		r.fn = r.a.run
	}
	r.a = pagedArgs{out: out, q: q, kc: kc, vc: vc, rows: rows, heads: heads, kvHeads: kvHeads, headDim: headDim, blockSize: blockSize}
	group := heads / kvHeads
	nsub := 1
	for nsub < group && (group%nsub != 0 || group/nsub > attnMaxGroup || len(rows)*kvHeads*nsub < p.Workers()) {
		nsub++
	}
	for group%nsub != 0 {
		nsub++
	}
	r.a.nsub, r.a.sg = nsub, group/nsub
	items := len(rows) * kvHeads * nsub
	if p.Workers() == 1 || work*heads*headDim < 1<<15 {
		r.a.run(0, items)
	} else {
		p.For(items, 1, r.fn)
	}
	r.a = pagedArgs{}
	return nil
}

// run processes work items [lo, hi). Item t covers row order(t / perRow), rows taken
// alternately from both ends of the batch so contiguous item ranges get balanced causal work.
func (a *pagedArgs) run(lo, hi int) {
	// Scratch from attention_flash.go's pool (the float kernels' assembly is not noescape,
	// so a stack array would move to the heap on every call).
	bp := attnScratch.Get().(*[attnScratchLen]float32)
	defer attnScratch.Put(bp)
	buf := bp
	perRow := a.kvHeads * a.nsub
	n := len(a.rows)
	qd, kvd, hd := a.heads*a.headDim, a.kvHeads*a.headDim, a.headDim
	group := a.heads / a.kvHeads
	for it := lo; it < hi; it++ {
		t, r := it/perRow, it%perRow
		i := t / 2
		if t%2 == 1 {
			i = n - 1 - t/2
		}
		kv, sub := r/a.nsub, r%a.nsub
		h0 := kv*group + sub*a.sg
		off := kv * hd
		qo := i*qd + h0*hd
		row := a.rows[i]
		PagedAttentionGroup(a.out[qo:qo+a.sg*hd], a.q[qo:qo+a.sg*hd], a.sg, a.kc[off:], a.vc[off:],
			row.Table, a.blockSize, row.Pos+1, kvd, hd, buf[:])
	}
}
