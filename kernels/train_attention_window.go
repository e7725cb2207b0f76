// This file holds training's causal attention with the options of Gemma and Phi-3: a sliding
// window (each row sees its latest Window positions, itself included), soft-capped scores
// (cap·tanh(s/cap)) and a query scalar other than 1/√hd. TrainAttention (train_attention.go)
// stays the plain path, unchanged; these run only when an option is set.
package kernels

import "math"

// TrainAttnOpts are the options of TrainAttentionWindow; the zero value is plain causal
// attention scaled by 1/√hd.
type TrainAttnOpts struct {
	Window  int     // > 0: row t sees keys [t-Window+1, t]
	Softcap float32 // > 0: scores become Softcap·tanh(s/Softcap) before the softmax
	Scale   float32 // > 0: multiplies q·k instead of 1/√hd
	// Starts, when not nil, holds for each of the B*T rows the first row of its document
	// (packed sequences: row t sees keys [Starts[b*T+t], t] of its batch row b; the values
	// must not decrease along a batch row and lie in [0, t]). It combines with Window.
	Starts []int32
}

// Plain reports whether o asks for nothing: plain causal attention scaled by 1/√hd.
func (o TrainAttnOpts) Plain() bool {
	return o.Window == 0 && o.Softcap == 0 && o.Scale == 0 && o.Starts == nil
}

// SideSize is the number of floats TrainAttentionWindow keeps for the backward of an
// (B, H, T, T) attention: the probabilities, and with a soft-cap the capped scores' tanh too.
func (o TrainAttnOpts) SideSize(B, H, T int) int {
	if o.Softcap > 0 {
		return 2 * B * H * T * T
	}
	return B * H * T * T
}

func (o TrainAttnOpts) scale(hd int) float32 {
	if o.Scale > 0 {
		return o.Scale
	}
	return float32(1 / math.Sqrt(float64(hd)))
}

// first is the first key row t of batch row b (of T rows) sees.
func (o TrainAttnOpts) first(b, T, t int) int {
	f := 0
	if o.Window > 0 {
		f = max(0, t-o.Window+1)
	}
	if o.Starts != nil {
		f = max(f, int(o.Starts[b*T+t]))
	}
	return f
}

// TrainAttentionWindow is TrainAttention with o's options. side holds o.SideSize(B, H, T)
// floats: the probabilities (B,H,T,T) as TrainAttention's att (0 outside each row's keys),
// then, with a soft-cap, tanh of the scaled scores over the cap at the same places. Each block
// of trainAttnBlock query rows multiplies only the keys one of its rows sees.
func TrainAttentionWindow(p *Pool, out, side, q, k, v []float32, s AttnShape, o TrainAttnOpts) {
	B, T, H, hd := s.B, s.T, s.H, s.HD
	qd, kvd, grp := s.QD(), s.KVD(), s.H/s.KVH
	scale, capv := o.scale(hd), o.Softcap
	var th []float32
	if capv > 0 {
		th = side[B*H*T*T:]
	}
	p.For(B*H, 1, func(lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/H, bh%H
			kh := h / grp
			pr := side[bh*T*T : (bh+1)*T*T]
			for t0 := 0; t0 < T; t0 += trainAttnBlock {
				t1 := min(t0+trainAttnBlock, T) // rows [t0, t1) see keys [k0, t1)
				k0 := o.first(b, T, t0)
				qm := Mat{Data: q[(b*T+t0)*qd+h*hd:], Stride: qd}
				km := Mat{Data: k[(b*T+k0)*kvd+kh*hd:], Stride: kvd, T: true}
				Serial.Gemm(t1-t0, t1-k0, hd, qm, km, pr[t0*T+k0:], T, false)
				for t := t0; t < t1; t++ {
					row := pr[t*T : (t+1)*T]
					u0 := o.first(b, T, t)
					mx := float32(math.Inf(-1))
					for u := u0; u <= t; u++ {
						x := row[u] * scale
						if capv > 0 {
							c := float32(math.Tanh(float64(x / capv)))
							th[bh*T*T+t*T+u] = c
							x = capv * c
						}
						row[u] = x
						mx = max(mx, x)
					}
					var sum float64
					for u := u0; u <= t; u++ {
						e := float32(math.Exp(float64(row[u] - mx)))
						row[u] = e
						sum += float64(e)
					}
					inv := float32(1 / sum)
					for u := u0; u <= t; u++ {
						row[u] *= inv
					}
					clear(row[:u0])
					clear(row[t+1:])
				}
				vm := Mat{Data: v[(b*T+k0)*kvd+kh*hd:], Stride: kvd}
				Serial.Gemm(t1-t0, hd, t1-k0, Mat{Data: pr[t0*T+k0:], Stride: T}, vm, out[(b*T+t0)*qd+h*hd:], qd, false)
			}
		}
	})
}

// TrainAttentionWindowGrad adds to dq, dk, dv the gradients of TrainAttentionWindow given
// dout, as TrainAttentionGrad does, with dS = P∘(dP − rowsum(P∘dP))∘(1 − tanh²)·scale under a
// soft-cap. side is the forward's; scratch is (B*KVH, T, T).
func TrainAttentionWindowGrad(p *Pool, dq, dk, dv, dout, side, q, k, v, scratch []float32, s AttnShape, o TrainAttnOpts) {
	B, T, H, KVH, hd := s.B, s.T, s.H, s.KVH, s.HD
	qd, kvd, grp := s.QD(), s.KVD(), s.H/s.KVH
	scale, capv := o.scale(hd), o.Softcap
	var th []float32
	if capv > 0 {
		th = side[B*H*T*T:]
	}
	p.For(B*KVH, 1, func(lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			b, kh := bk/KVH, bk%KVH
			ds := scratch[bk*T*T : (bk+1)*T*T]
			for h := kh * grp; h < (kh+1)*grp; h++ {
				bh := b*H + h
				pr := side[bh*T*T : (bh+1)*T*T]
				for t0 := 0; t0 < T; t0 += trainAttnBlock {
					t1 := min(t0+trainAttnBlock, T)
					k0 := o.first(b, T, t0)
					kOff := (b*T+k0)*kvd + kh*hd
					qOff := (b*T+t0)*qd + h*hd
					dy := Mat{Data: dout[qOff:], Stride: qd}
					pb := pr[t0*T+k0:]
					dsb := ds[t0*T+k0:]
					nk := t1 - k0
					Serial.Gemm(t1-t0, nk, hd, dy, Mat{Data: v[kOff:], Stride: kvd, T: true}, dsb, T, false)
					Serial.Gemm(nk, hd, t1-t0, Mat{Data: pb, Stride: T, T: true}, dy, dv[kOff:], kvd, true)
					for t := t0; t < t1; t++ {
						prow, drow := pr[t*T:(t+1)*T], ds[t*T:(t+1)*T]
						u0 := o.first(b, T, t)
						var sum float32
						for u := u0; u <= t; u++ {
							sum += prow[u] * drow[u]
						}
						for u := u0; u <= t; u++ {
							d := prow[u] * (drow[u] - sum)
							if capv > 0 {
								c := th[bh*T*T+t*T+u]
								d *= 1 - c*c
							}
							drow[u] = d * scale
						}
						clear(drow[k0:u0])
						clear(drow[t+1 : t1])
					}
					Serial.Gemm(t1-t0, hd, nk, Mat{Data: dsb, Stride: T}, Mat{Data: k[kOff:], Stride: kvd}, dq[qOff:], qd, true)
					Serial.Gemm(nk, hd, t1-t0, Mat{Data: dsb, Stride: T, T: true}, Mat{Data: q[qOff:], Stride: qd}, dk[kOff:], kvd, true)
				}
			}
		}
	})
}
