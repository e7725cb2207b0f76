// This file holds training's linear layer (matmul without bias), rotary position embeddings
// and causal multi-head attention with grouped KV heads over (B,T) sequences, each as a
// forward/backward pair (moved here from train/nn so that train/nn and the graph's training
// executor share them).
package kernels

import "math"

// TrainLinear sets out = inp·wᵀ. out is (N,OC), inp is (N,C), w is (OC,C) (GGUF [out, in]).
func TrainLinear(p *Pool, out, inp, w []float32, N, C, OC int) {
	p.Gemm(N, OC, C, Mat{Data: inp, Stride: C}, Mat{Data: w, Stride: C, T: true}, out, OC, false)
}

// TrainLinearGrad adds dout·w to dinp (or sets it when accInp is false) and doutᵀ·inp to dw.
// dinp, inp are (N,C), dout is (N,OC), dw, w are (OC,C).
func TrainLinearGrad(p *Pool, dinp, dw, dout, inp, w []float32, N, C, OC int, accInp bool) {
	p.Gemm(N, C, OC, Mat{Data: dout, Stride: OC}, Mat{Data: w, Stride: C}, dinp, C, accInp)
	p.Gemm(OC, C, N, Mat{Data: dout, Stride: OC, T: true}, Mat{Data: inp, Stride: C}, dw, C, true)
}

// TrainRope rotates, in place, the adjacent pairs (2i, 2i+1) of every head of x by the angle
// of its row's position (row % T) as the engine does. x is (N, heads*hd), cs is (T, hd): cos,
// sin interleaved per pair (Rope.Table).
func TrainRope(p *Pool, x, cs []float32, N, T, heads, hd int) {
	trainRotate(p, x, cs, N, T, heads, hd, 1)
}

// TrainRopeGrad maps, in place, the gradient with respect to the rotated x to the gradient
// with respect to x: the transpose of the rotation, i.e. the rotation by the negative angle.
// dx is (N, heads*hd), cs is (T, hd).
func TrainRopeGrad(p *Pool, dx, cs []float32, N, T, heads, hd int) {
	trainRotate(p, dx, cs, N, T, heads, hd, -1)
}

// trainRotate turns every pair by the angle whose cosine and sine are in cs, the sine times sign.
func trainRotate(p *Pool, x, cs []float32, N, T, heads, hd int, sign float32) {
	w := heads * hd
	p.For(N, TrainRowChunk(w), func(lo, hi int) {
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

// trainAttnBlock is the row block of the attention products: rows [t0, t0+trainAttnBlock) are multiplied
// with keys [0, t0+trainAttnBlock) only, so the work beyond causal is the upper half of the
// diagonal blocks (about T·trainAttnBlock/2 scores per head).
const trainAttnBlock = 32

// AttnShape is the geometry of one attention call.
type AttnShape struct {
	B, T, H, KVH, HD int
}

// QD and KVD are the query and key/value row widths.
func (s AttnShape) QD() int  { return s.H * s.HD }
func (s AttnShape) KVD() int { return s.KVH * s.HD }

// TrainAttention computes causal softmax(q·kᵀ/√hd)·v per (batch, head); query head h reads
// KV head h/(H/KVH). Scores and outputs are matmuls on Gemm per block of trainAttnBlock
// query rows against the keys they can see, run inline inside the per-head task (entries
// above the diagonal inside a block are masked). It keeps the probabilities in att (entries
// above the diagonal are 0).
// out, q are (B,T,H*hd), k, v are (B,T,KVH*hd), att is (B,H,T,T).
func TrainAttention(p *Pool, out, att, q, k, v []float32, s AttnShape) {
	B, T, H, hd := s.B, s.T, s.H, s.HD
	qd, kvd, grp := s.QD(), s.KVD(), s.H/s.KVH
	scale := float32(1 / math.Sqrt(float64(hd)))
	sp, bf := p.serial(), p.bf16 != nil
	p.For(B*H, 1, func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/H, bh%H
			kh := h / grp
			pr := att[bh*T*T : (bh+1)*T*T]
			for t0 := 0; t0 < T; t0 += trainAttnBlock {
				t1 := min(t0+trainAttnBlock, T) // rows [t0, t1) see keys [0, t1)
				qm := Mat{Data: q[(b*T+t0)*qd+h*hd:], Stride: qd}
				km := Mat{Data: k[b*T*kvd+kh*hd:], Stride: kvd, T: true}
				sp.Gemm(t1-t0, t1, hd, qm, km, pr[t0*T:], T, false)
				for t := t0; t < t1; t++ {
					row := pr[t*T : (t+1)*T]
					mx := float32(math.Inf(-1))
					for u := 0; u <= t; u++ {
						row[u] *= scale
						mx = max(mx, row[u])
					}
					var sum float64
					if bf { // bf16 mode: the vectorized exp (relative error ~2e-7)
						sum = ExpSub(row[:t+1], mx)
					} else {
						for u := 0; u <= t; u++ {
							e := float32(math.Exp(float64(row[u] - mx)))
							row[u] = e
							sum += float64(e)
						}
					}
					inv := float32(1 / sum)
					for u := 0; u <= t; u++ {
						row[u] *= inv
					}
					clear(row[t+1:])
				}
				vm := Mat{Data: v[b*T*kvd+kh*hd:], Stride: kvd}
				sp.Gemm(t1-t0, hd, t1, Mat{Data: pr[t0*T:], Stride: T}, vm, out[(b*T+t0)*qd+h*hd:], qd, false)
			}
		}
	})
}

// TrainAttentionGrad adds to dq, dk, dv the gradients of TrainAttention given dout:
// dP = dout·vᵀ, dv += Pᵀ·dout, dS = P∘(dP − rowsum(P∘dP))/√hd, dq += dS·k, dk += dSᵀ·q, each
// product a Gemm per block of trainAttnBlock query rows against the keys they see. Work is split by (batch, KV head) so the query heads sharing a KV
// head add into dk, dv in a fixed order. Shapes as TrainAttention; scratch is
// (B*KVH, T, T).
func TrainAttentionGrad(p *Pool, dq, dk, dv, dout, att, q, k, v, scratch []float32, s AttnShape) {
	B, T, H, KVH, hd := s.B, s.T, s.H, s.KVH, s.HD
	qd, kvd, grp := s.QD(), s.KVD(), s.H/s.KVH
	scale := float32(1 / math.Sqrt(float64(hd)))
	sp := p.serial()
	p.For(B*KVH, 1, func(lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			b, kh := bk/KVH, bk%KVH
			ds := scratch[bk*T*T : (bk+1)*T*T]
			kOff := b*T*kvd + kh*hd
			for h := kh * grp; h < (kh+1)*grp; h++ {
				pr := att[(b*H+h)*T*T : (b*H+h+1)*T*T]
				for t0 := 0; t0 < T; t0 += trainAttnBlock {
					t1 := min(t0+trainAttnBlock, T) // rows [t0, t1) see keys [0, t1)
					qOff := (b*T+t0)*qd + h*hd
					dy := Mat{Data: dout[qOff:], Stride: qd}
					pb := pr[t0*T:]
					dsb := ds[t0*T:]
					sp.Gemm(t1-t0, t1, hd, dy, Mat{Data: v[kOff:], Stride: kvd, T: true}, dsb, T, false)
					sp.Gemm(t1, hd, t1-t0, Mat{Data: pb, Stride: T, T: true}, dy, dv[kOff:], kvd, true)
					for t := t0; t < t1; t++ {
						prow, drow := pr[t*T:(t+1)*T], ds[t*T:(t+1)*T]
						var sum float32
						for u := 0; u <= t; u++ {
							sum += prow[u] * drow[u]
						}
						for u := 0; u <= t; u++ {
							drow[u] = prow[u] * (drow[u] - sum) * scale
						}
						clear(drow[t+1 : t1])
					}
					sp.Gemm(t1-t0, hd, t1, Mat{Data: dsb, Stride: T}, Mat{Data: k[kOff:], Stride: kvd}, dq[qOff:], qd, true)
					sp.Gemm(t1, hd, t1-t0, Mat{Data: dsb, Stride: T, T: true}, Mat{Data: q[qOff:], Stride: qd}, dk[kOff:], kvd, true)
				}
			}
		}
	})
}
