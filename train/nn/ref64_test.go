// This file holds the float64 reference implementations the gradient checks differentiate
// numerically: every layer's forward, and the whole model's loss, written as plainly as
// possible and independently of the float32 code under test.
package nn

import (
	"math"
	"strconv"

	"github.com/llmcloud/llmcloud/model"
)

// embedding64: out (N,C) = wte[tokens].
func embedding64(wte []float64, tokens []int32, C int) []float64 {
	out := make([]float64, 0, len(tokens)*C)
	for _, t := range tokens {
		out = append(out, wte[int(t)*C:(int(t)+1)*C]...)
	}
	return out
}

// rmsnorm64: out (N,C) = x / sqrt(mean(x²)+eps) · w.
func rmsnorm64(x, w []float64, N, C int, eps float64) []float64 {
	out := make([]float64, N*C)
	for i := 0; i < N; i++ {
		var ss float64
		for _, v := range x[i*C : (i+1)*C] {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(C)+eps)
		for j := 0; j < C; j++ {
			out[i*C+j] = x[i*C+j] * r * w[j]
		}
	}
	return out
}

// linear64: out (N,OC) = inp (N,C) · w (OC,C)ᵀ.
func linear64(inp, w []float64, N, C, OC int) []float64 {
	out := make([]float64, N*OC)
	for i := 0; i < N; i++ {
		for o := 0; o < OC; o++ {
			var s float64
			for j := 0; j < C; j++ {
				s += inp[i*C+j] * w[o*C+j]
			}
			out[i*OC+o] = s
		}
	}
	return out
}

// rope64 rotates adjacent pairs of every head of x (N, heads*hd) by (i%T)·theta^(-2j/hd).
func rope64(x []float64, N, T, heads, hd int, theta float64) []float64 {
	out := append([]float64(nil), x...)
	w := heads * hd
	for i := 0; i < N; i++ {
		pos := float64(i % T)
		for h := 0; h < heads; h++ {
			for j := 0; j < hd; j += 2 {
				a := pos * math.Pow(theta, -float64(j)/float64(hd))
				s, c := math.Sincos(a)
				o := i*w + h*hd + j
				x0, x1 := x[o], x[o+1]
				out[o] = x0*c - x1*s
				out[o+1] = x0*s + x1*c
			}
		}
	}
	return out
}

// attention64: causal GQA attention; q (B,T,H*hd), k, v (B,T,KVH*hd) -> (B,T,H*hd).
func attention64(q, k, v []float64, B, T, H, KVH, hd int) []float64 {
	qd, kvd := H*hd, KVH*hd
	out := make([]float64, B*T*qd)
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			kh := h / (H / KVH)
			for t := 0; t < T; t++ {
				sc := make([]float64, t+1)
				mx := math.Inf(-1)
				for u := 0; u <= t; u++ {
					var s float64
					for d := 0; d < hd; d++ {
						s += q[(b*T+t)*qd+h*hd+d] * k[(b*T+u)*kvd+kh*hd+d]
					}
					sc[u] = s / math.Sqrt(float64(hd))
					mx = math.Max(mx, sc[u])
				}
				var z float64
				for u := range sc {
					sc[u] = math.Exp(sc[u] - mx)
					z += sc[u]
				}
				for u := range sc {
					for d := 0; d < hd; d++ {
						out[(b*T+t)*qd+h*hd+d] += sc[u] / z * v[(b*T+u)*kvd+kh*hd+d]
					}
				}
			}
		}
	}
	return out
}

// swiglu64: g·σ(g)·u element-wise.
func swiglu64(g, u []float64) []float64 {
	out := make([]float64, len(g))
	for i := range g {
		out[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
	}
	return out
}

// crossEntropy64: mean over rows of logsumexp(logits) − logits[target]; logits (N,V).
func crossEntropy64(logits []float64, targets []int32, N, V int) float64 {
	var sum float64
	for i := 0; i < N; i++ {
		row := logits[i*V : (i+1)*V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		var z float64
		for _, v := range row {
			z += math.Exp(v - mx)
		}
		sum += mx + math.Log(z) - row[targets[i]]
	}
	return sum / float64(N)
}

func add64(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// model64 runs the whole network in float64 on the parameters w (laid out as Model.Params)
// and returns the logits (B*T, V) and, with targets, the mean loss.
func model64(c *model.Config, params []Param, w []float64, tokens, targets []int32, B, T int) ([]float64, float64) {
	off := map[string][]float64{}
	o := 0
	for _, p := range params {
		off[p.Name] = w[o : o+len(p.W)]
		o += len(p.W)
	}
	N, D, QD, KVD, F := B*T, c.Dim, c.QDim(), c.KVDim(), c.FFN
	eps := float64(c.NormEps)
	x := embedding64(off["token_embd.weight"], tokens, D)
	for l := 0; l < c.Layers; l++ {
		p := func(s string) []float64 { return off["blk."+strconv.Itoa(l)+"."+s+".weight"] }
		xn := rmsnorm64(x, p("attn_norm"), N, D, eps)
		q := rope64(linear64(xn, p("attn_q"), N, D, QD), N, T, c.Heads, c.HeadDim, c.RopeTheta)
		k := rope64(linear64(xn, p("attn_k"), N, D, KVD), N, T, c.KVHeads, c.HeadDim, c.RopeTheta)
		v := linear64(xn, p("attn_v"), N, D, KVD)
		y := attention64(q, k, v, B, T, c.Heads, c.KVHeads, c.HeadDim)
		x = add64(x, linear64(y, p("attn_output"), N, QD, D))
		xn = rmsnorm64(x, p("ffn_norm"), N, D, eps)
		h := swiglu64(linear64(xn, p("ffn_gate"), N, D, F), linear64(xn, p("ffn_up"), N, D, F))
		x = add64(x, linear64(h, p("ffn_down"), N, F, D))
	}
	xf := rmsnorm64(x, off["output_norm.weight"], N, D, eps)
	out := off["output.weight"]
	if c.Tied {
		out = off["token_embd.weight"]
	}
	logits := linear64(xf, out, N, D, c.Vocab)
	if targets == nil {
		return logits, 0
	}
	return logits, crossEntropy64(logits, targets, N, c.Vocab)
}
