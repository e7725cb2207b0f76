// Package nn is the trainer's model: the Llama architecture of package model (same Config, same
// GGUF tensor names and row-major layouts, RoPE on adjacent pairs) with a forward pass that
// keeps its activations and a backward pass written layer by layer by hand, llm.c's way. All
// parameters live in one flat buffer and all gradients in another; every tensor is a view.
// See docs/training.md, "Model forward/backward".
//
// For distributed training (docs/distributed-training.md) the parameters form units: unit 0
// the token embedding, units 1..L the blocks, unit L+1 the final norm and untied output.
// NewWith's Options let the caller supply each unit's weight and gradient storage (Units
// gives the sizes first), get BeforeUse/GradReady hooks around each unit's use in Forward and
// Backward, build one pipeline stage (blocks [lo, hi), K activation slots) driven by
// StageForward/StageBackward, and recompute each block's activations in Backward instead of
// keeping them (Recompute).
//
// This file implements the row-wise layers as forward/backward pairs: embedding, RMSNorm,
// SwiGLU, residual add and cross-entropy. Backward functions ACCUMULATE into the gradients of
// their inputs and parameters (+=), as llm.c's do. Reductions over rows (parameter gradients,
// the loss) run in a fixed order, so results never depend on goroutine timing.
package nn

import (
	"math"

	"github.com/llmcloud/llmcloud/kernels"
)

// embeddingForward sets out[i] = wte[tokens[i]]. out is (N,C), wte is (V,C), tokens is (N).
func embeddingForward(out, wte []float32, tokens []int32, N, C int) {
	for i := 0; i < N; i++ {
		t := int(tokens[i])
		copy(out[i*C:(i+1)*C], wte[t*C:(t+1)*C])
	}
}

// embeddingBackward adds dout[i] to dwte[tokens[i]], rows in order. dwte is (V,C), dout is
// (N,C), tokens is (N).
func embeddingBackward(dwte, dout []float32, tokens []int32, N, C int) {
	for i := 0; i < N; i++ {
		t := int(tokens[i])
		kernels.Add(dwte[t*C:(t+1)*C], dout[i*C:(i+1)*C])
	}
}

// rmsScale is 1/sqrt(mean(x²)+eps) computed as the inference kernels do (sum of squares of
// f32 products in float64, mean rounded to f32).
func rmsScale(x []float32, eps float32) float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	mean := float32(ss / float64(len(x)))
	return float32(1 / math.Sqrt(float64(mean+eps)))
}

// rmsnormForward sets out = x·rstd·w row by row and keeps rstd. out, x are (N,C), w is (C),
// rstd is (N).
func rmsnormForward(p *kernels.Pool, out, rstd, x, w []float32, N, C int, eps float32) {
	p.For(N, rowChunk(C), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xi, oi := x[i*C:(i+1)*C], out[i*C:(i+1)*C]
			r := rmsScale(xi, eps)
			rstd[i] = r
			for j, v := range xi {
				oi[j] = v * r * w[j]
			}
		}
	})
}

// rmsnormBackward adds to dx and dw the gradients of y = x·rstd·w:
// dx_j += rstd·(dy_j·w_j − x_j·rstd²·Σ_i dy_i·w_i·x_i / C), dw_j += Σ_rows dy_j·x_j·rstd.
// dx, dy, x are (N,C), dw, w are (C), rstd is (N). dx may not alias dy.
func rmsnormBackward(p *kernels.Pool, dx, dw, dy, x, w, rstd []float32, N, C int) {
	p.For(N, rowChunk(C), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xi, dyi, dxi := x[i*C:(i+1)*C], dy[i*C:(i+1)*C], dx[i*C:(i+1)*C]
			r := rstd[i]
			var dot float64
			for j, v := range xi {
				dot += float64(dyi[j] * w[j] * v)
			}
			c := r * r * float32(dot/float64(C))
			for j, v := range xi {
				dxi[j] += r * (dyi[j]*w[j] - v*c)
			}
		}
	})
	// dw: columns split across workers, rows summed in order.
	p.For(C, 64, func(lo, hi int) {
		for i := 0; i < N; i++ {
			xi, dyi, r := x[i*C:(i+1)*C], dy[i*C:(i+1)*C], rstd[i]
			for j := lo; j < hi; j++ {
				dw[j] += dyi[j] * xi[j] * r
			}
		}
	})
}

// swigluForward sets h = SiLU(g)·u, SiLU(g) = g·σ(g), with the engine's kernel
// (kernels.SwiGLU) row by row, so a row's values do not depend on how rows are split between
// workers. h, g, u are (N,F).
func swigluForward(p *kernels.Pool, h, g, u []float32, N, F int) {
	p.For(N, rowChunk(F), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			kernels.SwiGLU(h[i*F:(i+1)*F], g[i*F:(i+1)*F], u[i*F:(i+1)*F])
		}
	})
}

// swigluBackward adds to dg and du the gradients of h = SiLU(g)·u:
// du += dh·SiLU(g), dg += dh·u·σ(g)·(1 + g·(1−σ(g))). All are (n).
func swigluBackward(p *kernels.Pool, dg, du, dh, g, u []float32, n int) {
	p.For(n, 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := sigmoid(g[i])
			du[i] += dh[i] * g[i] * s
			dg[i] += dh[i] * u[i] * s * (1 + g[i]*(1-s))
		}
	})
}

func sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(float64(-x)))) }

// residualForward sets out = a + b element-wise; out may alias a or b. All are (n). Its
// backward is the identity on both inputs: the residual stream's gradient buffer is shared,
// so each branch's backward simply accumulates into it.
func residualForward(out, a, b []float32) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] + b[i]
	}
}

// crossEntropyForward sets probs to softmax(logits) row by row (kernels.Softmax, max
// subtracted) and losses[i] = −log probs[i][targets[i]], and returns the mean loss over the N
// rows (summed in row order in float64). A row whose target probability underflows float32
// gets its loss from an exact float64 log-sum-exp instead. logits, probs are (N,V), targets,
// losses are (N).
func crossEntropyForward(p *kernels.Pool, losses, probs, logits []float32, targets []int32, N, V int) float32 {
	p.For(N, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, pr := logits[i*V:(i+1)*V], probs[i*V:(i+1)*V]
			copy(pr, row)
			kernels.Softmax(pr)
			if pt := pr[targets[i]]; pt > 1e-30 {
				losses[i] = -float32(math.Log(float64(pt)))
				continue
			}
			losses[i] = float32(-kernels.LogSoftmaxAt(row, int(targets[i])))
		}
	})
	var sum float64
	for _, l := range losses[:N] {
		sum += float64(l)
	}
	return float32(sum / float64(N))
}

// crossEntropyBackward turns probs, in place, into dlogits = dloss·(probs − onehot(targets)),
// the gradient of dloss·losses[i] for every row (dloss = 1/N for the mean). probs is (N,V),
// targets (N).
func crossEntropyBackward(p *kernels.Pool, probs []float32, targets []int32, N, V int, dloss float32) {
	p.For(N, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d := probs[i*V : (i+1)*V]
			kernels.Scale(d, dloss)
			d[targets[i]] -= dloss
		}
	})
}

// rowChunk is the number of rows of width c worth handing to one worker (~16k values).
func rowChunk(c int) int { return max(1, (1<<14)/max(c, 1)) }
