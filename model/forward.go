// This file implements the forward pass: a batch of tokens at consecutive positions runs
// through every block (each linear layer as one matmul over the batch), writing keys and
// values into a per-layer f32 KV cache, and produces logits.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// Cache is a per-sequence KV cache. K[l] and V[l] are [Max, KVDim] for layer l; rows
// 0..Len-1 hold the keys/values (after RoPE) of the positions processed so far.
type Cache struct {
	K, V [][]float32
	Len  int // positions filled
	Max  int // capacity in positions

	ws *workspace // activation buffers reused across Forward calls on this cache
}

// NewCache allocates a cache for maxTokens positions.
func (m *Model) NewCache(maxTokens int) *Cache {
	maxTokens = max(maxTokens, 0)
	c := &Cache{Max: maxTokens}
	kv := m.Config.KVDim()
	for range m.Config.Layers {
		c.K = append(c.K, make([]float32, maxTokens*kv))
		c.V = append(c.V, make([]float32, maxTokens*kv))
	}
	return c
}

// Decode runs one token at position c.Len and returns its logits ([Vocab]).
func (m *Model) Decode(c *Cache, token int) ([]float32, error) {
	return m.Forward(c, []int{token}, c.Len, false)
}

// Forward processes tokens at positions start..start+n-1 (start <= c.Len; a smaller start
// overwrites and discards cached positions from start on) and leaves c.Len = start+n.
// It returns logits [n, Vocab] when allLogits is set, otherwise only the last row's [Vocab].
func (m *Model) Forward(c *Cache, tokens []int, start int, allLogits bool) ([]float32, error) {
	return m.ForwardTo(nil, c, tokens, start, allLogits)
}

// ForwardTo is Forward writing the logits into dst when it has the capacity (otherwise a new
// slice). With a reused dst and cache, a decode step allocates nothing in the model itself.
func (m *Model) ForwardTo(dst []float32, c *Cache, tokens []int, start int, allLogits bool) ([]float32, error) {
	cfg := &m.Config
	n := len(tokens)
	switch {
	case n == 0:
		return nil, fmt.Errorf("model: forward: no tokens")
	case len(c.K) != cfg.Layers:
		return nil, fmt.Errorf("model: forward: cache has %d layers, model %d", len(c.K), cfg.Layers)
	case start < 0 || start > c.Len:
		return nil, fmt.Errorf("model: forward: start position %d outside the cached 0..%d", start, c.Len)
	case start+n > c.Max:
		return nil, fmt.Errorf("model: forward: positions %d..%d overflow the KV cache of %d", start, start+n-1, c.Max)
	}
	for i, t := range tokens {
		if t < 0 || t >= cfg.Vocab {
			return nil, fmt.Errorf("model: forward: token %d (batch row %d) out of range [0, %d)", t, i, cfg.Vocab)
		}
	}
	c.Len = start // positions >= start are rewritten below; keep Len honest on error
	p := m.pool()
	dim, qd, kvd, hd := cfg.Dim, cfg.QDim(), cfg.KVDim(), cfg.HeadDim
	ws := c.workspace(cfg, n)
	x := ws.x[:n*dim]           // residual stream [n, dim]
	xb := ws.xb[:n*dim]         // normed input [n, dim]
	q := ws.q[:n*qd]            // [n, qDim]
	k := ws.k[:n*kvd]           // [n, kvDim]
	v := ws.v[:n*kvd]           // [n, kvDim]
	att := ws.att[:n*qd]        // attention output [n, qDim]
	gate := ws.gate[:n*cfg.FFN] // [n, ffn]
	up := ws.up[:n*cfg.FFN]     // [n, ffn]
	cs := ws.cs[:n*hd]          // RoPE cos/sin per row [n, headDim]
	for i, t := range tokens {
		if err := tensor.DequantizeRow(m.embd.Type, m.embd.RowData(t), x[i*dim:(i+1)*dim]); err != nil {
			return nil, fmt.Errorf("model: token_embd.weight row %d: %w", t, err)
		}
		m.rope.Table(cs[i*hd:(i+1)*hd], start+i)
	}
	mm := func(out, in []float32, w *tensor.Tensor) error {
		if err := p.MatMul(out, in, w, n); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		return nil
	}
	for l := range m.layers {
		ly := &m.layers[l]
		ws.rmsNormRows(p, xb, x, ly.attnNorm, n, dim, cfg.NormEps)
		if err := mm(q, xb, ly.wq); err != nil {
			return nil, err
		}
		if err := mm(k, xb, ly.wk); err != nil {
			return nil, err
		}
		if err := mm(v, xb, ly.wv); err != nil {
			return nil, err
		}
		kc, vc := c.K[l], c.V[l]
		for i := 0; i < n; i++ {
			qi, ki, vi := q[i*qd:(i+1)*qd], k[i*kvd:(i+1)*kvd], v[i*kvd:(i+1)*kvd]
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
			m.rope.Apply(qi, cfg.Heads, hd, cs[i*hd:(i+1)*hd])
			m.rope.Apply(ki, cfg.KVHeads, hd, cs[i*hd:(i+1)*hd])
			pos := start + i
			copy(kc[pos*kvd:(pos+1)*kvd], ki)
			copy(vc[pos*kvd:(pos+1)*kvd], vi)
		}
		// Causal attention: row i sees positions 0..start+i (online softmax over K/V blocks).
		ws.attn.Run(p, att, q, kc, vc, n, start, cfg.Heads, cfg.KVHeads, hd)
		if err := mm(xb, att, ly.wo); err != nil {
			return nil, err
		}
		kernels.Add(x, xb)
		ws.rmsNormRows(p, xb, x, ly.ffnNorm, n, dim, cfg.NormEps)
		if err := mm(gate, xb, ly.gate); err != nil {
			return nil, err
		}
		if err := mm(up, xb, ly.up); err != nil {
			return nil, err
		}
		ws.swiGLU(p, gate, up)
		if err := mm(xb, gate, ly.down); err != nil {
			return nil, err
		}
		kernels.Add(x, xb)
	}
	c.Len = start + n
	rows := x
	if !allLogits {
		rows = x[(n-1)*dim:]
	}
	nr := len(rows) / dim
	for i := 0; i < nr; i++ {
		kernels.RMSNorm(rows[i*dim:(i+1)*dim], rows[i*dim:(i+1)*dim], m.outNorm, cfg.NormEps)
	}
	if cap(dst) < nr*cfg.Vocab {
		dst = make([]float32, nr*cfg.Vocab)
	}
	logits := dst[:nr*cfg.Vocab]
	if err := p.MatMul(logits, rows, m.out, nr); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return logits, nil
}
