// This file implements the batched forward pass of the serving engine: one ragged batch of
// rows from many sequences (prefill chunks and decode tokens mixed) runs through every block
// with each linear layer as ONE matmul over all the step's rows; each row is rotated at its own
// position, its K/V row is written into its sequence's paged-KV slot, and attention reads each
// sequence's keys and values through its block table. Logits are computed only for the last
// row of the sequences that need them.
//
// Batch invariance: a row's result does not depend on the other rows of the batch. Row-wise
// ops (norms, RoPE, SwiGLU row by row) and paged attention are per row by construction;
// matmuls sum each output in an order that does not depend on m for m >= 2 (the GEMM paths),
// but m == 1 takes the GEMV path whose order differs. With Batch.Invariant set, matmuls go
// through kernels.MatMulInvariant, which runs a lone row on the GEMM kernels.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// BatchSeq is one sequence's share of a batch: Tokens at positions StartPos.., K/V slots
// through BlockTable (which must cover StartPos+len(Tokens) positions). Positions before
// StartPos must already be in the pool.
type BatchSeq struct {
	Tokens      []int
	StartPos    int
	BlockTable  []int32
	NeedsLogits bool // return the logits of this sequence's last row

	allLogits bool // with NeedsLogits: the logits of every row (Forward's allLogits)
}

// Batch is the reusable scratch of ForwardBatch: activations for the largest batch seen so far.
// One Batch serves one caller at a time.
type Batch struct {
	// Invariant makes every row's result bit-identical whatever the batch (see the file
	// comment). It costs single-sequence decode the GEMV fast path.
	Invariant bool

	wsc    *Cache // holds the activation workspace: Forward's own cache, or a private one
	rows   []kernels.PagedRow
	attn   kernels.PagedAttention
	last   []float32 // [rows needing logits, Dim]
	logits []float32 // [rows needing logits, Vocab]
	glu    gluRowsJob
	shOuts [][]float32 // reused argument lists of matMulShared
	shWs   []*tensor.Tensor
	qkv    qkvRowsJob
}

// matMul is out = in · wᵀ for rows rows ([rows, k] -> [rows, n]); in Invariant mode through
// kernels.MatMulInvariant, which keeps every row on the kernels' batch-size-independent GEMM
// order (a lone row runs the GEMM's kernels).
func (b *Batch) matMul(p *kernels.Pool, out, in []float32, w *tensor.Tensor, rows int) error {
	if !b.Invariant {
		return p.MatMul(out, in, w, rows)
	}
	return p.MatMulInvariant(out, in, w, rows)
}

// matMulShared is matMul for several weights of one input (q/k/v, gate/up): the kernels
// quantize the input once for all of them. A lone row in Invariant mode keeps MatMulInvariant.
func (b *Batch) matMulShared(p *kernels.Pool, outs [][]float32, in []float32, ws []*tensor.Tensor, rows int) error {
	if b.Invariant && rows == 1 {
		for i, w := range ws {
			if err := p.MatMulInvariant(outs[i], in, w, rows); err != nil {
				return fmt.Errorf("model: %w", err)
			}
		}
		return nil
	}
	if err := p.MatMulShared(outs, in, ws, rows); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// qkvRowsJob finishes rows' q, k, v after their matmuls (biases, Qwen3's q/k norms, RoPE at
// each row's position) and writes k, v into the rows' paged-KV slots; rows are independent.
type qkvRowsJob struct {
	m                   *Model
	ly                  *layer
	kv                  *PagedKV
	kc, vc, q, k, v, cs []float32
	rows                []kernels.PagedRow
	fn                  func(lo, hi int)
}

func (j *qkvRowsJob) run(lo, hi int) {
	cfg := &j.m.Config
	ly := j.ly
	qd, kvd, hd := cfg.QDim(), cfg.KVDim(), cfg.HeadDim
	for i := lo; i < hi; i++ {
		row := j.rows[i]
		qi, ki, vi := j.q[i*qd:(i+1)*qd], j.k[i*kvd:(i+1)*kvd], j.v[i*kvd:(i+1)*kvd]
		if ly.bq != nil {
			kernels.Add(qi, ly.bq)
			kernels.Add(ki, ly.bk)
			kernels.Add(vi, ly.bv)
		}
		if ly.qNorm != nil {
			for h := 0; h < cfg.Heads; h++ {
				kernels.RMSNorm(qi[h*hd:(h+1)*hd], qi[h*hd:(h+1)*hd], ly.qNorm, cfg.NormEps)
			}
			for h := 0; h < cfg.KVHeads; h++ {
				kernels.RMSNorm(ki[h*hd:(h+1)*hd], ki[h*hd:(h+1)*hd], ly.kNorm, cfg.NormEps)
			}
		}
		j.m.rope.Apply(qi, cfg.Heads, hd, j.cs[i*hd:(i+1)*hd])
		j.m.rope.Apply(ki, cfg.KVHeads, hd, j.cs[i*hd:(i+1)*hd])
		r := j.kv.slot(row.Table, row.Pos)
		copy(j.kc[r*kvd:(r+1)*kvd], ki)
		copy(j.vc[r*kvd:(r+1)*kvd], vi)
	}
}

// gluRowsJob is SwiGLU row by row: the vector kernel treats a row's tail differently from its
// body, so a flat split over the batch would make a row's values depend on its neighbours.
type gluRowsJob struct {
	gate, up []float32
	ffn      int
	fn       func(lo, hi int)
}

func (j *gluRowsJob) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		kernels.SwiGLU(j.gate[i*j.ffn:(i+1)*j.ffn], j.gate[i*j.ffn:(i+1)*j.ffn], j.up[i*j.ffn:(i+1)*j.ffn])
	}
}

// swiGLURows sets gate = SiLU(gate) * up for n rows of ffn values.
func (b *Batch) swiGLURows(p *kernels.Pool, gate, up []float32, n, ffn int) {
	j := &b.glu
	if j.fn == nil {
		j.fn = j.run
	}
	j.gate, j.up, j.ffn = gate, up, ffn
	if n*ffn < parallelMin {
		j.run(0, n)
	} else {
		p.For(n, max(1, 4096/ffn), j.fn)
	}
	j.gate, j.up = nil, nil
}

// ForwardBatch runs seqs as one ragged batch over the paged cache kv and returns the logits
// [number of seqs with NeedsLogits, Vocab], in seqs order. The logits alias b's buffers and
// are valid until b's next use.
func (m *Model) ForwardBatch(b *Batch, kv *PagedKV, seqs []BatchSeq) ([]float32, error) {
	return m.forwardBatch(nil, false, b, kv, seqs)
}

// forwardBatch is ForwardBatch writing the logits into dst when it has the capacity; otherwise
// into a new slice if fresh is set, or into b's buffer.
func (m *Model) forwardBatch(dst []float32, fresh bool, b *Batch, kv *PagedKV, seqs []BatchSeq) ([]float32, error) {
	cfg := &m.Config
	if len(kv.K) != cfg.Layers || kv.KVDim != cfg.KVDim() {
		return nil, fmt.Errorf("model: forward batch: paged KV has %d layers of %d, model %d of %d",
			len(kv.K), kv.KVDim, cfg.Layers, cfg.KVDim())
	}
	n, nl := 0, 0
	for si, s := range seqs {
		end := s.StartPos + len(s.Tokens)
		switch {
		case len(s.Tokens) == 0:
			return nil, fmt.Errorf("model: forward batch: sequence %d has no tokens", si)
		case s.StartPos < 0:
			return nil, fmt.Errorf("model: forward batch: sequence %d starts at %d", si, s.StartPos)
		case len(s.BlockTable)*kv.BlockSize < end:
			return nil, fmt.Errorf("model: forward batch: sequence %d: %d blocks of %d slots do not cover positions 0..%d",
				si, len(s.BlockTable), kv.BlockSize, end-1)
		}
		for _, blk := range s.BlockTable[:(end+kv.BlockSize-1)/kv.BlockSize] {
			if blk < 0 || int(blk) >= kv.NumBlocks {
				return nil, fmt.Errorf("model: forward batch: sequence %d: block %d outside the pool of %d", si, blk, kv.NumBlocks)
			}
		}
		for _, t := range s.Tokens {
			if t < 0 || t >= cfg.Vocab {
				return nil, fmt.Errorf("model: forward batch: sequence %d: token %d out of range [0, %d)", si, t, cfg.Vocab)
			}
		}
		n += len(s.Tokens)
		switch {
		case s.NeedsLogits && s.allLogits:
			nl += len(s.Tokens)
		case s.NeedsLogits:
			nl++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("model: forward batch: no tokens")
	}
	p := m.pool()
	dim, qd, kvd, hd := cfg.Dim, cfg.QDim(), cfg.KVDim(), cfg.HeadDim
	if b.wsc == nil {
		b.wsc = &Cache{}
	}
	ws := b.wsc.workspace(cfg, n)
	x := ws.x[:n*dim]           // residual stream [n, dim]
	xb := ws.xb[:n*dim]         // normed input [n, dim]
	q := ws.q[:n*qd]            // [n, qDim]
	k := ws.k[:n*kvd]           // [n, kvDim]
	v := ws.v[:n*kvd]           // [n, kvDim]
	att := ws.att[:n*qd]        // attention output [n, qDim]
	gate := ws.gate[:n*cfg.FFN] // [n, ffn]
	up := ws.up[:n*cfg.FFN]     // [n, ffn]
	cs := ws.cs[:n*hd]          // RoPE cos/sin per row [n, headDim]
	b.rows = b.rows[:0]
	i := 0
	for _, s := range seqs {
		for j, t := range s.Tokens {
			if err := tensor.DequantizeRow(m.embd.Type, m.embd.RowData(t), x[i*dim:(i+1)*dim]); err != nil {
				return nil, fmt.Errorf("model: token_embd.weight row %d: %w", t, err)
			}
			m.rope.Table(cs[i*hd:(i+1)*hd], s.StartPos+j)
			b.rows = append(b.rows, kernels.PagedRow{Pos: s.StartPos + j, Table: s.BlockTable})
			i++
		}
	}
	mm := func(out, in []float32, w *tensor.Tensor, rows int) error {
		if err := b.matMul(p, out, in, w, rows); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		return nil
	}
	for l := range m.layers {
		ly := &m.layers[l]
		ws.rmsNormRows(p, xb, x, ly.attnNorm, n, dim, cfg.NormEps)
		b.shOuts, b.shWs = append(b.shOuts[:0], q, k, v), append(b.shWs[:0], ly.wq, ly.wk, ly.wv)
		if err := b.matMulShared(p, b.shOuts, xb, b.shWs, n); err != nil {
			return nil, err
		}
		kc, vc := kv.K[l], kv.V[l]
		j := &b.qkv
		if j.fn == nil {
			j.fn = j.run
		}
		j.m, j.ly, j.kv, j.rows = m, ly, kv, b.rows
		j.kc, j.vc, j.q, j.k, j.v, j.cs = kc, vc, q, k, v, cs
		if n*qd < parallelMin {
			j.run(0, n)
		} else {
			p.For(n, 16, j.fn)
		}
		*j = qkvRowsJob{fn: j.fn} // drop the references
		if err := b.attn.Run(p, att, q, kc, vc, b.rows, cfg.Heads, cfg.KVHeads, hd, kv.BlockSize); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		if err := mm(xb, att, ly.wo, n); err != nil {
			return nil, err
		}
		kernels.Add(x, xb)
		ws.rmsNormRows(p, xb, x, ly.ffnNorm, n, dim, cfg.NormEps)
		b.shOuts, b.shWs = append(b.shOuts[:0], gate, up), append(b.shWs[:0], ly.gate, ly.up)
		if err := b.matMulShared(p, b.shOuts, xb, b.shWs, n); err != nil {
			return nil, err
		}
		b.swiGLURows(p, gate, up, n, cfg.FFN)
		if err := mm(xb, gate, ly.down, n); err != nil {
			return nil, err
		}
		kernels.Add(x, xb)
	}
	if nl == 0 {
		return nil, nil
	}
	if len(b.last) < nl*dim {
		b.last = make([]float32, nl*dim)
	}
	i, j := 0, 0
	for _, s := range seqs {
		i += len(s.Tokens)
		if !s.NeedsLogits {
			continue
		}
		first := i - 1
		if s.allLogits {
			first = i - len(s.Tokens)
		}
		for r := first; r < i; r++ {
			kernels.RMSNorm(b.last[j*dim:(j+1)*dim], x[r*dim:(r+1)*dim], m.outNorm, cfg.NormEps)
			j++
		}
	}
	logits := dst
	switch {
	case cap(dst) >= nl*cfg.Vocab:
	case fresh:
		logits = make([]float32, nl*cfg.Vocab)
	default:
		if len(b.logits) < nl*cfg.Vocab {
			b.logits = make([]float32, nl*cfg.Vocab)
		}
		logits = b.logits
	}
	logits = logits[:nl*cfg.Vocab]
	if err := mm(logits, b.last, m.out, nl); err != nil {
		return nil, err
	}
	return logits, nil
}
