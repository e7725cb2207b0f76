// Package eval measures models. This file implements perplexity exactly as llama.cpp's
// llama-perplexity computes it, so results are directly comparable with its output.
package eval

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// Result is a perplexity measurement.
type Result struct {
	PPL     float64   // exp(mean negative log-likelihood)
	Err     float64   // llama-perplexity's "+/-" estimate: PPL * stddev(nll) / sqrt(count-1)
	NLL     float64   // mean negative log-likelihood (nats)
	Chunks  int       // chunks evaluated
	Scored  int       // tokens scored
	Running []float64 // running PPL estimate after each chunk, as llama-perplexity prints "[i]ppl"
}

// Perplexity scores ids (the whole text tokenized once, with BOS prepended: ids[0] is taken
// as the BOS id) in llama-perplexity's way: floor(len(ids)/ctx) chunks of ctx consecutive
// tokens (the tail is dropped); in each chunk the first token is replaced by BOS, the chunk
// runs from an empty KV cache at positions 0..ctx-1, and positions ctx/2 .. ctx-2 are scored
// (each predicts the chunk's next token). Log-softmax uses the f32 logits with a float64
// sum of exponentials.
func Perplexity(m *model.Model, ids []int, ctx int) (Result, error) {
	return PerplexityChunks(m, ids, ctx, -1)
}

// PerplexityChunks is Perplexity over at most maxChunks chunks (all when maxChunks < 0).
func PerplexityChunks(m *model.Model, ids []int, ctx, maxChunks int) (Result, error) {
	var r Result
	if ctx < 4 {
		return r, fmt.Errorf("eval: perplexity context %d too small", ctx)
	}
	nChunks := len(ids) / ctx
	if nChunks == 0 {
		return r, fmt.Errorf("eval: %d tokens is less than one chunk of %d", len(ids), ctx)
	}
	if maxChunks >= 0 && maxChunks < nChunks {
		nChunks = maxChunks
	}
	bos := ids[0]
	nv := m.Config.Vocab
	cache := m.NewCache(ctx)
	chunk := make([]int, ctx)
	first := ctx / 2
	var nll, nll2 float64
	count := 0
	for c := 0; c < nChunks; c++ {
		copy(chunk, ids[c*ctx:(c+1)*ctx])
		chunk[0] = bos
		logits, err := m.Forward(cache, chunk, 0, true)
		if err != nil {
			return r, fmt.Errorf("eval: chunk %d: %w", c, err)
		}
		for j := first; j < ctx-1; j++ {
			row := logits[j*nv : (j+1)*nv]
			v := -kernels.LogSoftmaxAt(row, chunk[j+1])
			nll += v
			nll2 += v * v
			count++
		}
		r.Running = append(r.Running, math.Exp(nll/float64(count)))
	}
	r.Chunks, r.Scored = nChunks, count
	r.NLL = nll / float64(count)
	r.PPL = math.Exp(r.NLL)
	if v := nll2/float64(count) - r.NLL*r.NLL; v > 0 && count > 1 {
		r.Err = math.Sqrt(v/float64(count-1)) * r.PPL
	}
	return r, nil
}
