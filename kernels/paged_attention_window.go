// This file implements paged attention with the options of Gemma 2's attention: a sliding
// window (a row at position p attends to the Window latest positions, p itself included), a
// soft-cap of the scores (Softcap·tanh(s/Softcap) before the softmax) and a scale other than
// 1/sqrt(headDim). It is a plain row-by-row kernel (scores by Dot, a two-pass softmax, values
// by Axpy), separate from the flash kernel of paged_attention.go, which stays the path of
// attention without options. A row reads only the blocks holding positions inside its
// window: the table entries of earlier blocks are never read and may be -1 (freed).
package kernels

import (
	"fmt"
	"math"
	"sync"
)

// AttnOpts are the options of PagedAttention.RunOpts; the zero value is plain causal
// attention.
type AttnOpts struct {
	Window  int     // > 0: a row at position p attends to positions max(0, p-Window+1)..p
	Softcap float32 // > 0: each score s becomes Softcap·tanh(s/Softcap)
	Scale   float32 // > 0: scores are q·k times Scale instead of 1/sqrt(headDim)
	// Sinks (gpt-oss; nil: none): per query head a logit that joins the softmax's
	// denominator, exp(Sinks[h]) next to the scores' exps, weighing no value.
	Sinks []float32
}

// plain reports whether o is the zero options.
func (o AttnOpts) plain() bool {
	return o.Window == 0 && o.Softcap == 0 && o.Scale == 0 && o.Sinks == nil
}

// First is the first position a row at position pos attends to.
func (o AttnOpts) First(pos int) int {
	if o.Window > 0 {
		return max(0, pos-o.Window+1)
	}
	return 0
}

// RunOpts is Run with options. With the zero options it is Run itself.
func (r *PagedAttention) RunOpts(p *Pool, out, q, kc, vc []float32, rows []PagedRow, heads, kvHeads, headDim, blockSize int, o AttnOpts) error {
	return r.RunLayer(p, out, q, KVLayer{K: kc, V: vc}, rows, heads, kvHeads, headDim, blockSize, o)
}

// RunLayer is RunOpts over a layer's pools in any KV cache format (kvsrc.go).
func (r *PagedAttention) RunLayer(p *Pool, out, q []float32, kv KVLayer, rows []PagedRow, heads, kvHeads, headDim, blockSize int, o AttnOpts) error {
	if o.plain() {
		return r.run(p, out, q, kv, rows, heads, kvHeads, headDim, blockSize)
	}
	if heads%kvHeads != 0 || blockSize <= 0 || o.Window < 0 || o.Softcap < 0 || o.Scale < 0 || (o.Sinks != nil && len(o.Sinks) != heads) {
		return fmt.Errorf("paged attention: %d heads over %d KV heads, block size %d, options %+v", heads, kvHeads, blockSize, o)
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
		lo := o.First(row.Pos)
		for _, b := range row.Table[lo/blockSize : nb] {
			if b < 0 || (int(b)+1)*blockSize > poolRows {
				return fmt.Errorf("paged attention: row %d: block %d outside the pool", i, b)
			}
		}
		work += row.Pos - lo + 1
	}
	scale := o.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(headDim)))
	}
	qd, group := heads*headDim, heads/kvHeads
	fn := func(lo, hi int) {
		sp := windowScratch.Get().(*[]float32)
		defer windowScratch.Put(sp)
		var ks, vs kvSrc
		if kv.quantized() {
			bp := getKVScratch(headDim)
			defer kvScratch.Put(bp)
			ks.buf, vs.buf = *bp, *bp // keys are used up before values are read
		}
		for it := lo; it < hi; it++ {
			i, kvh := it/kvHeads, it%kvHeads
			row := rows[i]
			first := o.First(row.Pos)
			n := row.Pos - first + 1
			if cap(*sp) < n {
				*sp = make([]float32, n)
			}
			s := (*sp)[:n]
			for h := kvh * group; h < (kvh+1)*group; h++ {
				qh := q[i*qd+h*headDim : i*qd+(h+1)*headDim]
				oh := out[i*qd+h*headDim : i*qd+(h+1)*headDim]
				sink := float32(math.Inf(-1))
				if o.Sinks != nil {
					sink = o.Sinks[h]
				}
				ks.at(kv.K, kv.KQ, kv.Fmt, kvh*headDim)
				vs.at(kv.V, kv.VQ, kv.Fmt, kvh*headDim)
				windowHead(oh, qh, &ks, &vs, row.Table, first, s, kvd, blockSize, scale, o.Softcap, sink)
			}
		}
	}
	items := len(rows) * kvHeads
	if p.Workers() == 1 || work*heads*headDim < 1<<15 {
		fn(0, items)
	} else {
		p.For(items, 1, fn)
	}
	return nil
}

var windowScratch = sync.Pool{New: func() any { s := make([]float32, 0, 256); return &s }}

// windowHead is one query head qh over positions first..first+len(s)-1: scores into s, their
// softmax, and the weighted sum of values into oh. kc and vc are the head's keys and values
// in pools of rows of stride elements. sink (-Inf: none) joins the softmax's denominator.
func windowHead(oh, qh []float32, kc, vc *kvSrc, table []int32, first int, s []float32, stride, bs int, scale, softcap, sink float32) {
	hd := len(qh)
	at := func(p int) int { return int(table[p/bs])*bs + p%bs }
	mx := float32(math.Inf(-1))
	for j := range s {
		kr, _ := kc.seg(at(first+j), 1, stride, hd)
		v := Dot(qh, kr) * scale
		if softcap > 0 {
			v = softcap * float32(math.Tanh(float64(v/softcap)))
		}
		s[j] = v
		mx = max(mx, v)
	}
	mx = max(mx, sink)
	var sum float32
	if !math.IsInf(float64(sink), -1) {
		sum = float32(math.Exp(float64(sink - mx)))
	}
	for j, v := range s {
		e := float32(math.Exp(float64(v - mx)))
		s[j] = e
		sum += e
	}
	clear(oh)
	for j, w := range s {
		vr, _ := vc.seg(at(first+j), 1, stride, hd)
		Axpy(oh, w/sum, vr)
	}
}
