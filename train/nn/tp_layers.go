// This file implements the tensor-parallel layers of Megatron-LM (Shoeybi et al. 2019): the
// allreduce that ends a row-parallel linear in forward and a column-parallel linear's input
// gradient in backward (the paper's g and f operators), the vocab-parallel embedding, and the
// vocab-parallel cross-entropy, which reduces only the row maxima, the sums of exponentials
// and the target logits (N values each), never the (N, Vocab) logits; its backward is local.
package nn

import (
	"math"

	"github.com/llmcloud/llmcloud/kernels"
)

// tpState is a tensor-parallel model's group and the scratch of its vocab-parallel layers.
type tpState struct {
	comm     Comm
	vlo, vhi int       // this rank's vocabulary rows [vlo, vhi)
	mx       []float32 // (N) row maxima of the logits
	red      []float32 // (2N) sums of exponentials, target logits
}

func newTPState(c Comm, vocabLocal, maxN int) *tpState {
	r := c.Rank()
	return &tpState{comm: c, vlo: r * vocabLocal, vhi: (r + 1) * vocabLocal,
		mx: make([]float32, maxN), red: make([]float32, 2*maxN)}
}

// sum allreduces x over the group (a no-op without tensor parallelism) and panics with a
// *CommError naming op when the group fails.
func (s *tpState) sum(x []float32, op string) {
	if s == nil {
		return
	}
	if err := s.comm.AllReduceSum(x); err != nil {
		panic(&CommError{Op: op, Err: err})
	}
}

// embeddingForward sets out[i] to row tokens[i] of the vocabulary-sharded table wte when this
// rank holds it and to zero otherwise, then sums over ranks, so every rank ends with the full
// lookup. out is (N,C), wte is (vhi−vlo, C), tokens (N) are full-vocabulary ids.
func (s *tpState) embeddingForward(out, wte []float32, tokens []int32, N, C int) {
	for i := 0; i < N; i++ {
		t, o := int(tokens[i]), out[i*C:(i+1)*C]
		if t >= s.vlo && t < s.vhi {
			copy(o, wte[(t-s.vlo)*C:(t-s.vlo+1)*C])
		} else {
			clear(o)
		}
	}
	s.sum(out[:N*C], "embedding")
}

// embeddingBackward adds dout[i] to this rank's row of tokens[i], rows in order; tokens of
// other ranks are skipped. No communication: dout is the same on every rank.
func (s *tpState) embeddingBackward(dwte, dout []float32, tokens []int32, N, C int) {
	for i := 0; i < N; i++ {
		if t := int(tokens[i]); t >= s.vlo && t < s.vhi {
			kernels.Add(dwte[(t-s.vlo)*C:(t-s.vlo+1)*C], dout[i*C:(i+1)*C])
		}
	}
}

// crossEntropyForward is crossEntropyForward over vocabulary-sharded logits: it sets probs
// (this rank's columns of the global softmax) and losses[i] = log Σ_v exp(z_v − m) + m − z_t,
// m the global row maximum, and returns the mean loss over the N rows, the same on every rank.
// Three reductions of N values: max of m, sum of Σ exp and of z_t (the last two in one call).
// logits, probs are (N, V) with V = vhi−vlo local columns; targets, losses are (N).
func (s *tpState) crossEntropyForward(p *kernels.Pool, losses, probs, logits []float32, targets []int32, N, V int) float32 {
	mx, se, zt := s.mx[:N], s.red[:N], s.red[N:2*N]
	p.For(N, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			mx[i] = kernels.Max(logits[i*V : (i+1)*V])
		}
	})
	if err := s.comm.AllReduceMax(mx); err != nil {
		panic(&CommError{Op: "loss max", Err: err})
	}
	p.For(N, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, pr := logits[i*V:(i+1)*V], probs[i*V:(i+1)*V]
			copy(pr, row)
			se[i] = float32(kernels.ExpSub(pr, mx[i]))
			zt[i] = 0
			if t := int(targets[i]); t >= s.vlo && t < s.vhi {
				zt[i] = row[t-s.vlo]
			}
		}
	})
	s.sum(s.red[:2*N], "loss sums")
	p.For(N, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			kernels.Scale(probs[i*V:(i+1)*V], 1/se[i])
			losses[i] = float32(math.Log(float64(se[i]))) + mx[i] - zt[i]
		}
	})
	var sum float64
	for _, l := range losses[:N] {
		sum += float64(l)
	}
	return float32(sum / float64(N))
}

// crossEntropyBackward turns this rank's probabilities, in place, into its columns of
// dlogits = dloss·(probs − onehot(targets)); the one-hot entry is on the rank owning the
// target. probs is (N, V local), targets (N).
func (s *tpState) crossEntropyBackward(p *kernels.Pool, probs []float32, targets []int32, N, V int, dloss float32) {
	p.For(N, rowChunk(V), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d := probs[i*V : (i+1)*V]
			kernels.Scale(d, dloss)
			if t := int(targets[i]); t >= s.vlo && t < s.vhi {
				d[t-s.vlo] -= dloss
			}
		}
	})
}
