// This file holds the row-wise layers of training as forward/backward pairs (moved here from
// train/nn so that train/nn and the graph's training executor share them): embedding, RMSNorm,
// SwiGLU, residual add and cross-entropy. Backward functions ACCUMULATE into the gradients of
// their inputs and parameters (+=), as llm.c's do. Reductions over rows (parameter gradients,
// the loss) run in a fixed order, so results never depend on goroutine timing.
package kernels

import "math"

// TrainEmbedding sets out[i] = wte[tokens[i]]. out is (N,C), wte is (V,C), tokens is (N).
func TrainEmbedding(out, wte []float32, tokens []int32, N, C int) {
	for i := 0; i < N; i++ {
		t := int(tokens[i])
		copy(out[i*C:(i+1)*C], wte[t*C:(t+1)*C])
	}
}

// TrainEmbeddingGrad adds dout[i] to dwte[tokens[i]], rows in order. dwte is (V,C), dout is
// (N,C), tokens is (N).
func TrainEmbeddingGrad(dwte, dout []float32, tokens []int32, N, C int) {
	for i := 0; i < N; i++ {
		t := int(tokens[i])
		Add(dwte[t*C:(t+1)*C], dout[i*C:(i+1)*C])
	}
}

// trainRMSScale is 1/sqrt(mean(x²)+eps) computed as the inference kernels do (sum of squares of
// f32 products in float64, mean rounded to f32).
func trainRMSScale(x []float32, eps float32) float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	mean := float32(ss / float64(len(x)))
	return float32(1 / math.Sqrt(float64(mean+eps)))
}

// TrainRMSNorm sets out = x·rstd·w row by row and keeps rstd. out, x are (N,C), w is (C),
// rstd is (N).
func TrainRMSNorm(p *Pool, out, rstd, x, w []float32, N, C int, eps float32) {
	p.For(N, TrainRowChunk(C), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xi, oi := x[i*C:(i+1)*C], out[i*C:(i+1)*C]
			r := trainRMSScale(xi, eps)
			rstd[i] = r
			for j, v := range xi {
				oi[j] = v * r * w[j]
			}
		}
	})
}

// TrainRMSNormGrad adds to dx and dw the gradients of y = x·rstd·w:
// dx_j += rstd·(dy_j·w_j − x_j·rstd²·Σ_i dy_i·w_i·x_i / C), dw_j += Σ_rows dy_j·x_j·rstd.
// dx, dy, x are (N,C), dw, w are (C), rstd is (N). dx may not alias dy.
func TrainRMSNormGrad(p *Pool, dx, dw, dy, x, w, rstd []float32, N, C int) {
	p.For(N, TrainRowChunk(C), func(lo, hi int) {
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

// TrainSwiGLU sets h = SiLU(g)·u, SiLU(g) = g·σ(g), with the engine's kernel
// (SwiGLU) row by row, so a row's values do not depend on how rows are split between
// workers. h, g, u are (N,F).
func TrainSwiGLU(p *Pool, h, g, u []float32, N, F int) {
	p.For(N, TrainRowChunk(F), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			SwiGLU(h[i*F:(i+1)*F], g[i*F:(i+1)*F], u[i*F:(i+1)*F])
		}
	})
}

// TrainSwiGLUGrad adds to dg and du the gradients of h = SiLU(g)·u:
// du += dh·SiLU(g), dg += dh·u·σ(g)·(1 + g·(1−σ(g))). All are (n).
func TrainSwiGLUGrad(p *Pool, dg, du, dh, g, u []float32, n int) {
	p.For(n, 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := trainSigmoid(g[i])
			du[i] += dh[i] * g[i] * s
			dg[i] += dh[i] * u[i] * s * (1 + g[i]*(1-s))
		}
	})
}

func trainSigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(float64(-x)))) }

// TrainResidual sets out = a + b element-wise; out may alias a or b. All are (n). Its
// backward is the identity on both inputs: the residual stream's gradient buffer is shared,
// so each branch's backward simply accumulates into it.
func TrainResidual(out, a, b []float32) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] + b[i]
	}
}

// TrainCrossEntropy sets probs to softmax(logits) row by row (Softmax, max
// subtracted) and losses[i] = −log probs[i][targets[i]], and returns the mean loss over the N
// rows (summed in row order in float64). A row whose target probability underflows float32
// gets its loss from an exact float64 log-sum-exp instead. logits, probs are (N,V), targets,
// losses are (N). A row whose target is negative (IgnoreTarget: a position outside the loss
// mask) gets loss 0 and is left out of the mean; the mean of no rows is 0.
func TrainCrossEntropy(p *Pool, losses, probs, logits []float32, targets []int32, N, V int) float32 {
	p.For(N, TrainRowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, pr := logits[i*V:(i+1)*V], probs[i*V:(i+1)*V]
			copy(pr, row)
			Softmax(pr)
			if targets[i] < 0 {
				losses[i] = 0
				continue
			}
			if pt := pr[targets[i]]; pt > 1e-30 {
				losses[i] = -float32(math.Log(float64(pt)))
				continue
			}
			losses[i] = float32(-LogSoftmaxAt(row, int(targets[i])))
		}
	})
	var sum float64
	for _, l := range losses[:N] {
		sum += float64(l)
	}
	n := CountTargets(targets[:N])
	if n == 0 {
		return 0
	}
	return float32(sum / float64(n))
}

// IgnoreTarget is the target of a position that takes no part in the loss.
const IgnoreTarget = -1

// CountTargets is the number of targets that take part in the loss (not negative).
func CountTargets(targets []int32) int {
	n := 0
	for _, t := range targets {
		if t >= 0 {
			n++
		}
	}
	return n
}

// TrainCrossEntropyGrad turns probs, in place, into dlogits = dloss·(probs − onehot(targets)),
// the gradient of dloss·losses[i] for every row (dloss = 1/N for the mean). probs is (N,V),
// targets (N). A row whose target is negative gets a zero gradient.
func TrainCrossEntropyGrad(p *Pool, probs []float32, targets []int32, N, V int, dloss float32) {
	p.For(N, TrainRowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d := probs[i*V : (i+1)*V]
			if targets[i] < 0 {
				clear(d)
				continue
			}
			Scale(d, dloss)
			d[targets[i]] -= dloss
		}
	})
}

// TrainSoftCrossEntropyGrad is TrainCrossEntropyGrad against target distributions: row i of
// probs (the softmax of the logits) becomes dloss·(probs_i - soft_i), the gradient of the
// cross-entropy -Σ_j soft_ij log probs_ij (distillation: soft is a teacher's probabilities). A
// row whose target is negative is outside the loss and becomes zero.
func TrainSoftCrossEntropyGrad(p *Pool, probs, soft []float32, targets []int32, N, V int, dloss float32) {
	p.For(N, TrainRowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d := probs[i*V : (i+1)*V]
			if targets[i] < 0 {
				clear(d)
				continue
			}
			for j, s := range soft[i*V : (i+1)*V] {
				d[j] = float32(d[j]*dloss) - float32(dloss*s) // as Scale then the one-hot subtraction: bit for bit the targets' gradient for one-hot rows
			}
		}
	})
}

// TrainRowChunk is the number of rows of width c worth handing to one worker (~16k values).
func TrainRowChunk(c int) int { return max(1, (1<<14)/max(c, 1)) }
