// This file implements causal scaled-dot-product attention of one query head over a KV cache,
// the building block for multi-head, grouped-query (GQA) and multi-query (MQA) attention.
package kernels

import (
	"math"
	"time"
)

// AttentionHead computes out = softmax(q·Kᵀ/sqrt(headDim)) · V for one query head over the
// first nPos cached positions.
// q is [headDim]; k and v start at this head's KV-head offset inside cache rows of stride
// elements (k[p*stride : p*stride+headDim] is position p's key); out is [headDim]; scores is
// scratch of at least nPos values.
func AttentionHead(out, q, k, v []float32, nPos, stride, headDim int, scores []float32) {
	scale := float32(1 / math.Sqrt(float64(headDim)))
	sc := scores[:nPos]
	for p := range sc {
		sc[p] = Dot(q[:headDim], k[p*stride:p*stride+headDim]) * scale
	}
	Softmax(sc)
	o := out[:headDim]
	clear(o)
	for p, a := range sc {
		vr := v[p*stride : p*stride+headDim]
		for i := range o {
			o[i] += a * vr[i]
		}
	}
}

// Attention runs AttentionHead for every query head of one token.
// q is [heads, headDim]; k and v are cache rows [nPos, kvHeads*headDim]; out is [heads, headDim].
// Query head h reads KV head h / (heads/kvHeads) (GQA; kvHeads == 1 is MQA).
func Attention(out, q, k, v []float32, nPos, heads, kvHeads, headDim int, scores []float32) {
	if slowOn && slowAttention > 0 { // an injected slowdown: slowdown.go
		t0 := time.Now()
		attention(out, q, k, v, nPos, heads, kvHeads, headDim, scores)
		spinAfter(t0, slowAttention)
		return
	}
	attention(out, q, k, v, nPos, heads, kvHeads, headDim, scores)
}

// attention is Attention without the injected-slowdown hook.
func attention(out, q, k, v []float32, nPos, heads, kvHeads, headDim int, scores []float32) {
	group := heads / kvHeads
	stride := kvHeads * headDim
	for h := 0; h < heads; h++ {
		off := (h / group) * headDim
		AttentionHead(out[h*headDim:], q[h*headDim:], k[off:], v[off:], nPos, stride, headDim, scores)
	}
}
