// This file holds reference training attention and its gradient: causal attention within each
// sequence of the batch (see the package comment for the layout), grouped-query heads (query
// head h reads key/value head h / (heads/kv_heads)), scores scaled by 1/sqrt(head_dim) (or the attribute scale), then
// optionally soft-capped (cap * tanh(score / cap)), and optionally limited to the latest
// `window` positions of the sequence (the row itself included).
package ref

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
)

// attention computes y for q, k, v and, when dy is not nil, the gradients dq, dk, dv of
// <dy, y>.
func attention(c *ctx, q, k, v, dy *Tensor, a graph.Attrs) (y, dq, dk, dv *Tensor, err error) {
	H, KVH, hd := int(a.Int("heads", 0)), int(a.Int("kv_heads", 0)), int(a.Int("head_dim", 0))
	window, capv := int(a.Int("window", 0)), a.Float("softcap", 0)
	n := q.Shape[0]
	if c.seqStart != nil && len(c.seqStart) != n {
		return nil, nil, nil, nil, fmt.Errorf("%d rows, but %d positions", n, len(c.seqStart))
	}
	qd, kvd, grp := H*hd, KVH*hd, H/KVH
	scale := 1 / math.Sqrt(float64(hd))
	if sc := a.Float("scale", 0); sc > 0 {
		scale = sc
	}
	y = zerosF(q.Shape)
	if dy != nil {
		dq, dk, dv = zerosF(q.Shape), zerosF(k.Shape), zerosF(v.Shape)
	}
	for t := 0; t < n; t++ {
		lo := c.start(t)
		if window > 0 {
			lo = max(lo, t-window+1)
		}
		m := t - lo + 1
		s, p, dp := make([]float64, m), make([]float64, m), make([]float64, m)
		for h := 0; h < H; h++ {
			qo, ko := t*qd+h*hd, (h/grp)*hd
			for j := 0; j < m; j++ {
				kr := (lo+j)*kvd + ko
				var d float64
				for i := 0; i < hd; i++ {
					d += q.F[qo+i] * k.F[kr+i]
				}
				s[j] = d * scale
				if capv > 0 {
					s[j] = capv * math.Tanh(s[j]/capv)
				}
			}
			softmaxRow(p, s)
			for j := 0; j < m; j++ {
				vr := (lo+j)*kvd + ko
				for i := 0; i < hd; i++ {
					y.F[qo+i] += p[j] * v.F[vr+i]
				}
			}
			if dy == nil {
				continue
			}
			var sum float64
			for j := 0; j < m; j++ {
				vr := (lo+j)*kvd + ko
				dp[j] = 0
				for i := 0; i < hd; i++ {
					dp[j] += dy.F[qo+i] * v.F[vr+i]
					dv.F[vr+i] += p[j] * dy.F[qo+i]
				}
				sum += p[j] * dp[j]
			}
			for j := 0; j < m; j++ {
				ds := p[j] * (dp[j] - sum) // d/d(capped score)
				if capv > 0 {
					th := s[j] / capv // s[j] is the capped score: tanh(raw/cap)
					ds *= 1 - th*th
				}
				ds *= scale
				kr := (lo+j)*kvd + ko
				for i := 0; i < hd; i++ {
					dq.F[qo+i] += ds * k.F[kr+i]
					dk.F[kr+i] += ds * q.F[qo+i]
				}
			}
		}
	}
	return y, dq, dk, dv, nil
}

// attentionSinks is causal attention (window, soft-cap, scale as attention) with a sink per
// query head: each row's softmax runs over its scores and the head's sink logit, whose share
// of the probability weighs no value (gpt-oss).
func attentionSinks(c *ctx, q, k, v, sinks *Tensor, a graph.Attrs) (*Tensor, error) {
	H, KVH, hd := int(a.Int("heads", 0)), int(a.Int("kv_heads", 0)), int(a.Int("head_dim", 0))
	window, capv := int(a.Int("window", 0)), a.Float("softcap", 0)
	n := q.Shape[0]
	qd, kvd, grp := H*hd, KVH*hd, H/KVH
	scale := 1 / math.Sqrt(float64(hd))
	if sc := a.Float("scale", 0); sc > 0 {
		scale = sc
	}
	y := zerosF(q.Shape)
	for t := 0; t < n; t++ {
		lo := c.start(t)
		if window > 0 {
			lo = max(lo, t-window+1)
		}
		m := t - lo + 1
		for h := 0; h < H; h++ {
			qo, ko := t*qd+h*hd, (h/grp)*hd
			s, p := make([]float64, m+1), make([]float64, m+1)
			for j := 0; j < m; j++ {
				kr := (lo+j)*kvd + ko
				var d float64
				for i := 0; i < hd; i++ {
					d += q.F[qo+i] * k.F[kr+i]
				}
				s[j] = d * scale
				if capv > 0 {
					s[j] = capv * math.Tanh(s[j]/capv)
				}
			}
			s[m] = sinks.F[h]
			softmaxRow(p, s)
			for j := 0; j < m; j++ {
				vr := (lo+j)*kvd + ko
				for i := 0; i < hd; i++ {
					y.F[qo+i] += p[j] * v.F[vr+i]
				}
			}
		}
	}
	return y, nil
}
