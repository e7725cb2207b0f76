// This file runs attention and what feeds it: rope (each row rotated at its position by a
// cos/sin table filled once per run), qkv_rope (biases, per-head q/k norms and RoPE in one
// pass over the rows) and attention itself (the rows' k, v written into the layer's paged KV
// slots, then kernels.PagedAttention over each row's sequence, with the op's window, soft-cap
// and scale when it has them).
package exec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// parallelMin is the element count below which a row-wise op runs on the calling goroutine
// (a pool fan-out costs about a microsecond).
const parallelMin = 1 << 15

// ropeTable is the cos/sin of every row's position for one RoPE configuration.
type ropeTable struct {
	rope   *kernels.Rope
	freqs  int // value id of the divisors, -1 if none
	cs     []float32
	filled uint64 // the run it was filled for
}

// ropeFor returns the table for these attributes and divisors (shared by every node using it).
func (p *Program) ropeFor(a graph.Attrs, freqs int) (*ropeTable, error) {
	hd, theta, neox := int(a.Int("head_dim", 0)), a.Float("theta", 0), a.Int("neox", 0) != 0
	mscale, fscale := float32(a.Float("mscale", 1)), float32(a.Float("freq_scale", 1))
	yarn := yarnOf(a)
	for _, t := range p.ropes {
		if t.rope.Dims == hd && t.rope.Base == theta && t.rope.NeoX == neox && t.freqs == freqs && t.rope.Mscale == mscale &&
			t.rope.FreqScale == fscale && (t.rope.Yarn == nil) == (yarn == nil) && (yarn == nil || *t.rope.Yarn == *yarn) {
			return t, nil
		}
	}
	var factors []float32
	if freqs >= 0 {
		factors = p.vals[freqs].vec
		if factors == nil {
			return nil, fmt.Errorf("rope divisors %s must be a weight", p.vals[freqs].v)
		}
	}
	r, err := kernels.NewRope(hd, theta, neox, factors)
	if err != nil {
		return nil, err
	}
	r.Mscale, r.FreqScale = mscale, fscale
	if yarn != nil {
		if err := r.SetYarn(*yarn); err != nil {
			return nil, err
		}
	}
	t := &ropeTable{rope: r, freqs: freqs}
	p.ropes = append(p.ropes, t)
	return t, nil
}

// yarnOf returns the YaRN scaling of the attributes yarn_* (graph/ops_mla.go), nil if none.
func yarnOf(a graph.Attrs) *kernels.Yarn {
	if _, ok := a["yarn_factor"]; !ok {
		return nil
	}
	return &kernels.Yarn{Factor: a.Float("yarn_factor", 1), OrigCtx: int(a.Int("yarn_orig_ctx", 0)),
		BetaFast: a.Float("yarn_beta_fast", 32), BetaSlow: a.Float("yarn_beta_slow", 1)}
}

// table returns the rows' cos/sin ([n, head_dim]), filling it on the run's first use.
func (t *ropeTable) table(p *Program, pos []int) []float32 {
	hd := t.rope.Dims
	if t.filled != p.runs {
		if cap(t.cs) < len(pos)*hd {
			t.cs = make([]float32, len(pos)*hd)
		}
		t.cs = t.cs[:len(pos)*hd]
		for i, ps := range pos {
			t.rope.Table(t.cs[i*hd:(i+1)*hd], ps)
		}
		t.filled = p.runs
	}
	return t.cs
}

// qkvRopeOp runs both rope and qkv_rope (rope: k, v absent).
type qkvRopeOp struct {
	q, k, v, pos       int // value ids (k, v: -1 for rope)
	qo, ko, vo         int
	bq, bk, bv, qn, kn []float32
	heads, kvh, hd     int
	eps                float32
	tab                *ropeTable
	// kvLayer >= 0: the rows' k, v also go into this layer's paged KV slots here (the
	// attention reading them then skips its copy), in the same parallel pass
	kvLayer int
	// per run
	qd, kd, vd, cs []float32
	kv             *KV // the step's pool (its layer kvLayer)
	prows          []kernels.PagedRow
	bs             int
	fn             func(lo, hi int)
}

func (p *Program) compileRope(n *graph.Node) (instr, error) {
	a := n.Attrs
	freqs := -1
	if len(n.Args) == 3 {
		freqs = p.ids[n.Args[2]]
	}
	t, err := p.ropeFor(a, freqs)
	if err != nil {
		return nil, err
	}
	o := &qkvRopeOp{q: p.ids[n.Args[0]], pos: p.ids[n.Args[1]], qo: p.ids[n.Outs[0]], k: -1, kvLayer: -1,
		heads: int(a.Int("heads", 0)), hd: int(a.Int("head_dim", 0)), tab: t}
	o.fn = o.rows
	return o, nil
}

func (p *Program) compileQKVRope(n *graph.Node) (instr, error) {
	a := n.Attrs
	bias, norm, freqs := graph.QKVRopeArgs(a, len(n.Args))
	fid := -1
	if freqs >= 0 {
		fid = p.ids[n.Args[freqs]]
	}
	t, err := p.ropeFor(a, fid)
	if err != nil {
		return nil, err
	}
	id := func(i int) int { return p.ids[n.Args[i]] }
	vec := func(i int) []float32 { return p.vals[id(i)].vec }
	o := &qkvRopeOp{q: id(0), k: id(1), v: id(2), pos: id(3),
		qo: p.ids[n.Outs[0]], ko: p.ids[n.Outs[1]], vo: p.ids[n.Outs[2]],
		heads: int(a.Int("heads", 0)), kvh: int(a.Int("kv_heads", 0)), hd: int(a.Int("head_dim", 0)),
		eps: float32(a.Float("eps", 0)), tab: t, kvLayer: -1}
	if bias >= 0 {
		o.bq, o.bk, o.bv = vec(bias), vec(bias+1), vec(bias+2)
		if o.bq == nil || o.bk == nil || o.bv == nil {
			return nil, fmt.Errorf("biases must be weights")
		}
	}
	if norm >= 0 {
		o.qn, o.kn = vec(norm), vec(norm+1)
		if o.qn == nil || o.kn == nil {
			return nil, fmt.Errorf("q/k norms must be weights")
		}
	}
	o.fn = o.rows
	return o, nil
}

func (o *qkvRopeOp) run(p *Program) error {
	pos := p.vals[o.pos].ints
	o.cs = o.tab.table(p, pos)
	q, qo := p.f32(o.q), p.f32(o.qo)
	if !aliased(q, qo) {
		copy(qo, q)
	}
	o.qd = qo
	if o.k >= 0 {
		k, v, ko, vo := p.f32(o.k), p.f32(o.v), p.f32(o.ko), p.f32(o.vo)
		if !aliased(k, ko) {
			copy(ko, k)
		}
		if !aliased(v, vo) {
			copy(vo, v)
		}
		o.kd, o.vd = ko, vo
	}
	if o.kvLayer >= 0 {
		st := p.step
		rows, err := st.layerRows(o.kvLayer)
		if err != nil {
			return err
		}
		if err := checkSlots(st, rows, o.kvLayer, o.kvh*o.hd); err != nil {
			return err
		}
		o.kv, o.prows, o.bs = &st.KV, rows, st.KV.BlockSize
	}
	n := len(pos)
	if n*o.heads*o.hd < parallelMin {
		o.rows(0, n)
	} else {
		p.pool.For(n, 16, o.fn)
	}
	o.qd, o.kd, o.vd, o.cs, o.kv, o.prows = nil, nil, nil, nil, nil, nil
	return nil
}

// rows processes rows [lo, hi) in place, in the hand-written forward's order: biases of q, k,
// v; norms of q's then k's heads; rotation of q then k.
func (o *qkvRopeOp) rows(lo, hi int) {
	qd, kvd, hd := o.heads*o.hd, o.kvh*o.hd, o.hd
	r := o.tab.rope
	for i := lo; i < hi; i++ {
		qi, cs := o.qd[i*qd:(i+1)*qd], o.cs[i*hd:(i+1)*hd]
		if o.kd == nil {
			r.Apply(qi, o.heads, hd, cs)
			continue
		}
		ki, vi := o.kd[i*kvd:(i+1)*kvd], o.vd[i*kvd:(i+1)*kvd]
		if o.bq != nil {
			kernels.Add(qi, o.bq)
			kernels.Add(ki, o.bk)
			kernels.Add(vi, o.bv)
		}
		if o.qn != nil {
			for h := 0; h < o.heads; h++ {
				kernels.RMSNorm(qi[h*hd:(h+1)*hd], qi[h*hd:(h+1)*hd], o.qn, o.eps)
			}
			for h := 0; h < o.kvh; h++ {
				kernels.RMSNorm(ki[h*hd:(h+1)*hd], ki[h*hd:(h+1)*hd], o.kn, o.eps)
			}
		}
		r.Apply(qi, o.heads, hd, cs)
		r.Apply(ki, o.kvh, hd, cs)
		if o.kv != nil {
			row := o.prows[i]
			o.kv.store(o.kvLayer, int(row.Table[row.Pos/o.bs])*o.bs+row.Pos%o.bs, ki, vi)
		}
	}
}

type attentionOp struct {
	q, k, v, out          int
	written               bool // the qkv_rope before it wrote k, v into the cache
	layer, heads, kvh, hd int
	opts                  kernels.AttnOpts // window, soft-cap, scale (zero: plain causal attention)
	attn                  kernels.PagedAttention
}

func (p *Program) compileAttention(n *graph.Node) (instr, error) {
	a := n.Attrs
	o := &attentionOp{q: p.ids[n.Args[0]], k: p.ids[n.Args[1]], v: p.ids[n.Args[2]], out: p.ids[n.Outs[0]],
		layer: int(a.Int("layer", 0)), heads: int(a.Int("heads", 0)), kvh: int(a.Int("kv_heads", 0)),
		hd: int(a.Int("head_dim", 0)),
		opts: kernels.AttnOpts{Window: int(a.Int("window", 0)), Softcap: float32(a.Float("softcap", 0)),
			Scale: float32(a.Float("scale", 0))}}
	if len(n.Args) == 4 {
		if o.opts.Sinks = p.vals[p.ids[n.Args[3]]].vec; len(o.opts.Sinks) != o.heads {
			return nil, fmt.Errorf("argument %s: the sinks must be an f32[%d] weight", n.Args[3], o.heads)
		}
	}
	// k and v straight from a qkv_rope of the same head layout: that op writes them into the
	// cache in its pass over the rows.
	k, v := n.Args[1], n.Args[2]
	if d := k.Def; d != nil && d.Op == "qkv_rope" && v.Def == d && k.Index == 1 && v.Index == 2 {
		if q, ok := p.byNode[d].(*qkvRopeOp); ok && q.kvLayer < 0 && q.kvh == o.kvh && q.hd == o.hd {
			q.kvLayer, o.written = o.layer, true
		}
	}
	return o, nil
}

// checkSlots checks that every row's KV slot of layer is inside the pool (rows: the step's
// rows of layer's KV group).
func checkSlots(st *Step, rows []kernels.PagedRow, layer, kvd int) error {
	if layer >= len(st.KV.K) {
		return fmt.Errorf("layer %d: the paged KV has %d layers", layer, len(st.KV.K))
	}
	bs := st.KV.BlockSize
	n, err := st.KV.poolRows(layer, kvd, kvd)
	if err != nil {
		return err
	}
	for i, row := range rows {
		b := row.Pos / bs
		if b >= len(row.Table) {
			return fmt.Errorf("row %d at position %d: its table has %d blocks of %d", i, row.Pos, len(row.Table), bs)
		}
		r := int(row.Table[b])*bs + row.Pos%bs
		if row.Table[b] < 0 || r >= n {
			return fmt.Errorf("row %d: block %d outside the pool", i, row.Table[b])
		}
	}
	return nil
}

func (o *attentionOp) run(p *Program) error {
	st := p.step
	kvd, bs := o.kvh*o.hd, st.KV.BlockSize
	rows, err := st.layerRows(o.layer)
	if err != nil {
		return err
	}
	if !o.written {
		if err := checkSlots(st, rows, o.layer, kvd); err != nil {
			return err
		}
		k, v := p.f32(o.k), p.f32(o.v)
		for i, row := range rows {
			r := int(row.Table[row.Pos/bs])*bs + row.Pos%bs
			st.KV.store(o.layer, r, k[i*kvd:(i+1)*kvd], v[i*kvd:(i+1)*kvd])
		}
	}
	return o.attn.RunLayer(p.pool, p.f32(o.out), p.f32(o.q), st.KV.layer(o.layer), rows, o.heads, o.kvh, o.hd, bs, o.opts)
}
