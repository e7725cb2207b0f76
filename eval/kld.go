// This file measures how far a model's next-token distributions are from a base model's
// (usually the F16 original of a quantized model) on the chunks and positions perplexity
// scores: the mean KL divergence KL(P_base || P_model), as llama-perplexity --kl-divergence
// reports it, with the model's own perplexity on the same chunks. llama-perplexity reads GGUF
// only; this works for every model llmcloud opens (Hugging Face AWQ/GPTQ checkpoints too).
package eval

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/model"
)

// KLResult is a KL divergence measurement, with the model's perplexity on the same tokens.
type KLResult struct {
	Result          // the model's perplexity on the scored tokens
	KLD     float64 // mean KL(P_base || P_model), nats
	KLDErr  float64 // standard error of the mean
	Top1    float64 // fraction of positions where both models' most likely token agree
	BasePPL float64 // the base model's perplexity on the same tokens
}

// KLDivergence runs base and m over the chunks PerplexityChunks uses (ids tokenized with BOS
// first, at most maxChunks chunks of ctx; all when maxChunks < 0) and compares their
// distributions at the scored positions. Both models must share the vocabulary.
func KLDivergence(base, m *model.Model, ids []int, ctx, maxChunks int) (KLResult, error) {
	var r KLResult
	if ctx < 4 {
		return r, fmt.Errorf("eval: perplexity context %d too small", ctx)
	}
	nv := m.Config.Vocab
	if base.Config.Vocab != nv {
		return r, fmt.Errorf("eval: the base model's vocabulary has %d tokens, the model's %d", base.Config.Vocab, nv)
	}
	nChunks := len(ids) / ctx
	if nChunks == 0 {
		return r, fmt.Errorf("eval: %d tokens is less than one chunk of %d", len(ids), ctx)
	}
	if maxChunks >= 0 && maxChunks < nChunks {
		nChunks = maxChunks
	}
	bos := ids[0]
	cb, cm := base.NewCache(ctx), m.NewCache(ctx)
	chunk := make([]int, ctx)
	first := ctx / 2
	lpb, lpm := make([]float64, nv), make([]float64, nv)
	var nll, nll2, bnll, kl, kl2 float64
	count, agree := 0, 0
	for c := 0; c < nChunks; c++ {
		copy(chunk, ids[c*ctx:(c+1)*ctx])
		chunk[0] = bos
		lb, err := base.Forward(cb, chunk, 0, true)
		if err != nil {
			return r, fmt.Errorf("eval: base model, chunk %d: %w", c, err)
		}
		lm, err := m.Forward(cm, chunk, 0, true)
		if err != nil {
			return r, fmt.Errorf("eval: chunk %d: %w", c, err)
		}
		for j := first; j < ctx-1; j++ {
			ab := logSoftmax(lpb, lb[j*nv:(j+1)*nv])
			am := logSoftmax(lpm, lm[j*nv:(j+1)*nv])
			var d float64
			for i, b := range lpb {
				d += math.Exp(b) * (b - lpm[i])
			}
			d = max(d, 0)
			kl += d
			kl2 += d * d
			if ab == am {
				agree++
			}
			v := -lpm[chunk[j+1]]
			nll += v
			nll2 += v * v
			bnll -= lpb[chunk[j+1]]
			count++
		}
		r.Running = append(r.Running, math.Exp(nll/float64(count)))
	}
	n := float64(count)
	r.Chunks, r.Scored = nChunks, count
	r.NLL = nll / n
	r.PPL = math.Exp(r.NLL)
	if v := nll2/n - r.NLL*r.NLL; v > 0 && count > 1 {
		r.Err = math.Sqrt(v/(n-1)) * r.PPL
	}
	r.KLD = kl / n
	if v := kl2/n - r.KLD*r.KLD; v > 0 && count > 1 {
		r.KLDErr = math.Sqrt(v / (n - 1))
	}
	r.Top1 = float64(agree) / n
	r.BasePPL = math.Exp(bnll / n)
	return r, nil
}

// logSoftmax fills dst with the log-softmax of row (float64 sums) and returns the argmax.
func logSoftmax(dst []float64, row []float32) int {
	am := 0
	for i, v := range row {
		if v > row[am] {
			am = i
		}
	}
	mx := float64(row[am])
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v) - mx)
	}
	ls := math.Log(sum)
	for i, v := range row {
		dst[i] = float64(v) - mx - ls
	}
	return am
}
