// This file is the loss and hand-derived gradient of one draft head over a batch of rows:
// a = H·Wᵀ (+ X·Uᵀ, X the previous tokens' embeddings, with token input) + b, z = H + SiLU(a),
// logits = z·Eᵀ (E the target's frozen output matrix), mean cross-entropy against the labels.
// Backward: G = (softmax − onehot)/n, dz = G·E, da = dz ⊙ SiLU'(a) with
// SiLU'(a) = σ(a)·(1 + a·(1 − σ(a))), dW += daᵀ·H, dU += daᵀ·X, db += Σ_rows da.
package drafthead

import (
	"math"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/spec"
)

// work holds one batch's buffers, grown as needed.
type work struct {
	a, z, logits, dz []float32
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// result is one head's numbers over a batch.
type result struct {
	loss    float64 // summed cross-entropy over labelled rows
	correct int     // rows whose top-1 equals the label
	rows    int     // labelled rows
}

// lossGrad runs head j over the rows of hidden ([rows, D]; emb: their previous tokens'
// embeddings, with token input) against labels (−1: no label) with the output matrix e
// ([V, D]); when dW and db are not nil it adds the gradient of the mean loss over the
// labelled rows to them (and to dU, with token input).
func lossGrad(pool *kernels.Pool, w *work, h *spec.Head, j int, hidden, emb []float32, labels []int32, e []float32, dW, dU, db []float32) result {
	D, V, n := h.Dim, h.Vocab, len(labels)
	w.a, w.z, w.logits = grow(w.a, n*D), grow(w.z, n*D), grow(w.logits, n*V)
	h.Forward(pool, j, hidden, emb, w.a, w.z, n)
	pool.Gemm(n, V, D, kernels.Mat{Data: w.z, Stride: D}, kernels.Mat{Data: e, Stride: D, T: true}, w.logits, V, false)
	var res result
	for _, y := range labels {
		if y >= 0 {
			res.rows++
		}
	}
	if res.rows == 0 {
		return res
	}
	scale := float32(1) / float32(res.rows)
	for r, y := range labels {
		row := w.logits[r*V : (r+1)*V]
		if y < 0 {
			clear(row) // no gradient from unlabelled rows
			continue
		}
		mx, arg := row[0], 0
		for i, x := range row {
			if x > mx {
				mx, arg = x, i
			}
		}
		if arg == int(y) {
			res.correct++
		}
		var sum float64
		for _, x := range row {
			sum += math.Exp(float64(x - mx))
		}
		res.loss += math.Log(sum) - float64(row[y]-mx)
		if dW == nil {
			continue
		}
		inv := 1 / sum
		for i, x := range row {
			row[i] = float32(math.Exp(float64(x-mx))*inv) * scale
		}
		row[y] -= scale
	}
	if dW == nil {
		return res
	}
	w.dz = grow(w.dz, n*D)
	pool.Gemm(n, D, V, kernels.Mat{Data: w.logits, Stride: V}, kernels.Mat{Data: e, Stride: D}, w.dz, D, false)
	for i, a := range w.a[:n*D] {
		s := float32(1 / (1 + math.Exp(float64(-a))))
		w.dz[i] *= s * (1 + a*(1-s)) // dz becomes da
	}
	pool.Gemm(D, D, n, kernels.Mat{Data: w.dz, Stride: D, T: true}, kernels.Mat{Data: hidden, Stride: D}, dW, D, true)
	if h.TokenInput() {
		pool.Gemm(D, D, n, kernels.Mat{Data: w.dz, Stride: D, T: true}, kernels.Mat{Data: emb, Stride: D}, dU, D, true)
	}
	for r := range n {
		for i, v := range w.dz[r*D : (r+1)*D] {
			db[i] += v
		}
	}
	return res
}
