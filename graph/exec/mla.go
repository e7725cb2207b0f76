// This file runs mla_attention (graph/ops_mla.go), multi-head latent attention over the paged
// KV cache in the absorbed-weight form: a layer's K pool holds per token [c | kpe] (the latent
// and the rotated RoPE key, R+rope floats) and its V pool nothing. Per row and head, q's
// non-rotated part is taken through W_UK_h into the latent's space (qa = W_UK_hᵀ q_nope), so
// a score is qa·c_t + q_pe·kpe_t, one dot over R+rope floats of the cached row, no key ever
// expanded; the softmax-weighted sum of the latents then goes through W_UV_h to the head's
// output. kv_b is dequantized to f32 once, at compile time.
package exec

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

type mlaOp struct {
	q, c, kpe, pos, out      int
	layer, h, nope, rope, vd int
	r                        int       // latent width
	kvb                      []float32 // [h*(nope+vd), r]
	scale                    float32
	tab                      *ropeTable
	fn                       func(lo, hi int)
	qd, cd, kd, od, cs, kc   []float32        // per run
	kq                       []byte           // per run: the layer's rows when the cache is not f32
	kf                       kernels.KVFormat // their format
	tmp                      []float32        // a row being quantized
	rows                     []kernels.PagedRow
	bs                       int
}

func (p *Program) compileMLA(n *graph.Node) (instr, error) {
	a := n.Attrs
	id := func(i int) int { return p.ids[n.Args[i]] }
	o := &mlaOp{q: id(0), c: id(1), kpe: id(2), pos: id(3), out: p.ids[n.Outs[0]],
		layer: int(a.Int("layer", 0)), h: int(a.Int("heads", 0)), nope: int(a.Int("nope", 0)),
		rope: int(a.Int("rope", 0)), vd: int(a.Int("v_dim", 0)), r: n.Args[1].Type.Shape[1].N}
	o.scale = float32(1 / math.Sqrt(float64(o.nope+o.rope)))
	if s := a.Float("scale", 0); s > 0 {
		o.scale = float32(s)
	}
	w, err := p.weightArg(n, 4)
	if err != nil {
		return nil, err
	}
	if o.kvb, err = w.Float32(); err != nil {
		return nil, fmt.Errorf("weight %s: %w", w.Name, err)
	}
	ra := graph.Attrs{"head_dim": graph.Int(int64(o.rope)), "theta": a["theta"], "neox": graph.Int(a.Int("neox", 0))}
	for _, k := range []string{"mscale", "yarn_factor", "yarn_orig_ctx", "yarn_beta_fast", "yarn_beta_slow"} {
		if v, ok := a[k]; ok {
			ra[k] = v
		}
	}
	if o.tab, err = p.ropeFor(ra, -1); err != nil {
		return nil, err
	}
	o.fn = o.attend
	return o, nil
}

func (o *mlaOp) run(p *Program) error {
	st := p.step
	w := o.r + o.rope
	if o.layer >= len(st.KV.K) {
		return fmt.Errorf("layer %d: the paged KV has %d layers", o.layer, len(st.KV.K))
	}
	kc, bs := st.KV.K[o.layer], st.KV.BlockSize
	nrows, err := st.KV.poolRows(o.layer, w, 0)
	if err != nil {
		return err
	}
	var kq []byte
	if st.KV.quantized() {
		kq = st.KV.KQ[o.layer]
		if cap(o.tmp) < w {
			o.tmp = make([]float32, w)
		}
	}
	pos := p.vals[o.pos].ints
	cs := o.tab.table(p, pos)
	cd, kd := p.f32(o.c), p.f32(o.kpe)
	rows, err := st.layerRows(o.layer)
	if err != nil {
		return err
	}
	for i, row := range rows {
		b := row.Pos / bs
		if b >= len(row.Table) || row.Table[b] < 0 {
			return fmt.Errorf("row %d at position %d: its table has %d blocks of %d", i, row.Pos, len(row.Table), bs)
		}
		s := int(row.Table[b])*bs + row.Pos%bs
		if s >= nrows {
			return fmt.Errorf("row %d: block %d outside the pool of %d rows of %d", i, row.Table[b], nrows, w)
		}
		var dst []float32
		if kq != nil {
			dst = o.tmp[:w]
		} else {
			dst = kc[s*w : (s+1)*w]
		}
		copy(dst[:o.r], cd[i*o.r:(i+1)*o.r])
		copy(dst[o.r:], kd[i*o.rope:(i+1)*o.rope])
		o.tab.rope.Apply(dst[o.r:], 1, o.rope, cs[i*o.rope:(i+1)*o.rope])
		if kq != nil {
			st.KV.KFmt.StoreRow(kq, s, dst)
		}
	}
	// Every row's earlier positions are in the pool now (rows of one step included).
	o.qd, o.od, o.cs, o.kc, o.rows, o.bs = p.f32(o.q), p.f32(o.out), cs, kc, rows, bs
	o.kq, o.kf = kq, st.KV.KFmt
	n := len(rows)
	if n*o.h*o.r < parallelMin {
		o.attend(0, n)
	} else {
		p.pool.For(n, 1, o.fn)
	}
	o.qd, o.od, o.cs, o.kc, o.rows, o.kq = nil, nil, nil, nil, nil, nil
	return nil
}

// attend computes rows [lo, hi) of the output.
func (o *mlaOp) attend(lo, hi int) {
	hd, w, R := o.nope+o.rope, o.r+o.rope, o.r
	qa := make([]float32, w) // [W_UK_hᵀ q_nope | rotated q_pe]
	ctx := make([]float32, R)
	var kb []float32 // a dequantized row of a quantized cache
	if o.kq != nil {
		kb = make([]float32, w)
	}
	cached := func(s int) []float32 {
		if o.kq == nil {
			return o.kc[s*w : (s+1)*w]
		}
		o.kf.LoadRows(kb, o.kq, s, 1, 0, w)
		return kb
	}
	var sc []float32
	for i := lo; i < hi; i++ {
		row := o.rows[i]
		if cap(sc) < row.Pos+1 {
			sc = make([]float32, row.Pos+1)
		}
		sc = sc[:row.Pos+1]
		for h := 0; h < o.h; h++ {
			q := o.qd[(i*o.h+h)*hd : (i*o.h+h+1)*hd]
			base := h * (o.nope + o.vd) * R // head h's W_UK rows, then its W_UV rows
			clear(qa[:R])
			for j := 0; j < o.nope; j++ {
				kernels.Axpy(qa[:R], q[j], o.kvb[base+j*R:base+(j+1)*R])
			}
			copy(qa[R:], q[o.nope:])
			o.tab.rope.Apply(qa[R:], 1, o.rope, o.cs[i*o.rope:(i+1)*o.rope])
			m := float32(math.Inf(-1))
			for t := range sc {
				s := int(row.Table[t/o.bs])*o.bs + t%o.bs
				sc[t] = kernels.Dot(qa, cached(s)) * o.scale
				m = max(m, sc[t])
			}
			var sum float32
			for t := range sc {
				sc[t] = float32(math.Exp(float64(sc[t] - m)))
				sum += sc[t]
			}
			clear(ctx)
			for t := range sc {
				s := int(row.Table[t/o.bs])*o.bs + t%o.bs
				kernels.Axpy(ctx, sc[t]/sum, cached(s)[:R])
			}
			out := o.od[(i*o.h+h)*o.vd : (i*o.h+h+1)*o.vd]
			wv := base + o.nope*R
			for j := range out {
				out[j] = kernels.Dot(o.kvb[wv+j*R:wv+(j+1)*R], ctx)
			}
		}
	}
}
