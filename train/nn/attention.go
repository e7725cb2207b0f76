// This file implements the linear layer (matmul without bias), rotary position embeddings
// and causal multi-head attention with grouped KV heads, each as a forward/backward pair.
package nn

import (
	"math"

	"github.com/llmcloud/llmcloud/kernels"
)

// linearForward sets out = inp·wᵀ. out is (N,OC), inp is (N,C), w is (OC,C) (GGUF [out, in]).
func linearForward(p *kernels.Pool, out, inp, w []float32, N, C, OC int) {
	p.Gemm(N, OC, C, kernels.Mat{Data: inp, Stride: C}, kernels.Mat{Data: w, Stride: C, T: true}, out, OC, false)
}

// linearBackward adds dout·w to dinp (or sets it when accInp is false) and doutᵀ·inp to dw.
// dinp, inp are (N,C), dout is (N,OC), dw, w are (OC,C).
func linearBackward(p *kernels.Pool, dinp, dw, dout, inp, w []float32, N, C, OC int, accInp bool) {
	p.Gemm(N, C, OC, kernels.Mat{Data: dout, Stride: OC}, kernels.Mat{Data: w, Stride: C}, dinp, C, accInp)
	p.Gemm(OC, C, N, kernels.Mat{Data: dout, Stride: OC, T: true}, kernels.Mat{Data: inp, Stride: C}, dw, C, true)
}

// ropeForward rotates, in place, the adjacent pairs (2i, 2i+1) of every head of x by the angle
// of its row's position (row % T) as the engine does. x is (N, heads*hd), cs is (T, hd): cos,
// sin interleaved per pair (kernels.Rope.Table).
func ropeForward(p *kernels.Pool, x, cs []float32, N, T, heads, hd int) {
	rotate(p, x, cs, N, T, heads, hd, 1)
}

// ropeBackward maps, in place, the gradient with respect to the rotated x to the gradient
// with respect to x: the transpose of the rotation, i.e. the rotation by the negative angle.
// dx is (N, heads*hd), cs is (T, hd).
func ropeBackward(p *kernels.Pool, dx, cs []float32, N, T, heads, hd int) {
	rotate(p, dx, cs, N, T, heads, hd, -1)
}

// rotate turns every pair by the angle whose cosine and sine are in cs, the sine times sign.
func rotate(p *kernels.Pool, x, cs []float32, N, T, heads, hd int, sign float32) {
	w := heads * hd
	p.For(N, rowChunk(w), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			c := cs[(i%T)*hd : (i%T+1)*hd]
			row := x[i*w : (i+1)*w]
			for h := 0; h < heads; h++ {
				v := row[h*hd : (h+1)*hd]
				for j := 0; j < hd; j += 2 {
					co, si := c[j], sign*c[j+1]
					x0, x1 := v[j], v[j+1]
					v[j] = x0*co - x1*si
					v[j+1] = x0*si + x1*co
				}
			}
		}
	})
}

// attnShape is the geometry of one attention call.
type attnShape struct {
	B, T, H, KVH, hd int
}

func (s attnShape) qd() int  { return s.H * s.hd }
func (s attnShape) kvd() int { return s.KVH * s.hd }

// attentionForward computes causal softmax(q·kᵀ/√hd)·v per (batch, head); query head h reads
// KV head h/(H/KVH). It keeps the probabilities in att (entries above the diagonal are 0).
// out, q are (B,T,H*hd), k, v are (B,T,KVH*hd), att is (B,H,T,T).
func attentionForward(p *kernels.Pool, out, att, q, k, v []float32, s attnShape) {
	B, T, H, hd := s.B, s.T, s.H, s.hd
	qd, kvd, grp := s.qd(), s.kvd(), s.H/s.KVH
	scale := float32(1 / math.Sqrt(float64(hd)))
	p.For(B*H, 1, func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/H, bh%H
			kh := h / grp
			for t := 0; t < T; t++ {
				qt := q[(b*T+t)*qd+h*hd:][:hd]
				pr := att[(bh*T+t)*T:][:T]
				mx := float32(math.Inf(-1))
				for u := 0; u <= t; u++ {
					sc := kernels.Dot(qt, k[(b*T+u)*kvd+kh*hd:][:hd]) * scale
					pr[u] = sc
					mx = max(mx, sc)
				}
				var sum float64
				for u := 0; u <= t; u++ {
					e := float32(math.Exp(float64(pr[u] - mx)))
					pr[u] = e
					sum += float64(e)
				}
				inv := float32(1 / sum)
				ot := out[(b*T+t)*qd+h*hd:][:hd]
				clear(ot)
				for u := 0; u <= t; u++ {
					pr[u] *= inv
					kernels.Axpy(ot, pr[u], v[(b*T+u)*kvd+kh*hd:][:hd])
				}
				clear(pr[t+1:])
			}
		}
	})
}

// attentionBackward adds to dq, dk, dv the gradients of attentionForward given dout:
// dP = dout·vᵀ, dv += Pᵀ·dout, dS = P∘(dP − rowsum(P∘dP)), dq += dS·k/√hd, dk += dSᵀ·q/√hd.
// Work is split by (batch, KV head) so the query heads sharing a KV head add into dk, dv in
// a fixed order. Shapes as attentionForward; scratch is (B*KVH*T).
func attentionBackward(p *kernels.Pool, dq, dk, dv, dout, att, q, k, v, scratch []float32, s attnShape) {
	B, T, H, KVH, hd := s.B, s.T, s.H, s.KVH, s.hd
	qd, kvd, grp := s.qd(), s.kvd(), s.H/s.KVH
	scale := float32(1 / math.Sqrt(float64(hd)))
	p.For(B*KVH, 1, func(lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			b, kh := bk/KVH, bk%KVH
			dp := scratch[bk*T : (bk+1)*T]
			for h := kh * grp; h < (kh+1)*grp; h++ {
				for t := 0; t < T; t++ {
					pr := att[((b*H+h)*T+t)*T:][:T]
					dot := dout[(b*T+t)*qd+h*hd:][:hd]
					var sum float32
					for u := 0; u <= t; u++ {
						dp[u] = kernels.Dot(dot, v[(b*T+u)*kvd+kh*hd:][:hd])
						sum += pr[u] * dp[u]
						kernels.Axpy(dv[(b*T+u)*kvd+kh*hd:][:hd], pr[u], dot)
					}
					qt := q[(b*T+t)*qd+h*hd:][:hd]
					dqt := dq[(b*T+t)*qd+h*hd:][:hd]
					for u := 0; u <= t; u++ {
						ds := pr[u] * (dp[u] - sum) * scale
						kernels.Axpy(dqt, ds, k[(b*T+u)*kvd+kh*hd:][:hd])
						kernels.Axpy(dk[(b*T+u)*kvd+kh*hd:][:hd], ds, qt)
					}
				}
			}
		}
	})
}
