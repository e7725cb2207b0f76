// This file is HeadProposer, the learned draft head as an engine.HiddenProposer: from the
// target's hidden state at a sequence's last known token it drafts one token per head
// (Medusa-1: head j's top-1 through the target's frozen output matrix; with token input each
// head also reads the token before its own, so the drafts form a chain), deterministically, so
// Probs stays nil and verification is a point-mass check.
package spec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// HeadProposer drafts with a Head on top of its target. One Propose call at a time.
type HeadProposer struct {
	head   *Head
	out    *tensor.Tensor   // the target's output matrix [Vocab, Dim]
	embd   []float32        // the target's token embedding [Vocab, Dim], with token input
	w, u   []*tensor.Tensor // the heads' matrices as F32 tensors, for the kernels' GEMV
	tmp    []float32
	pool   *kernels.Pool
	a, z   []float32
	logits []float32
}

// NewHeadProposer checks that head fits target (width and vocabulary) and returns its
// proposer. pool runs the head's matmuls (nil: kernels.Serial).
func NewHeadProposer(head *Head, target *model.Model, pool *kernels.Pool) (*HeadProposer, error) {
	cfg := &target.Config
	if head.Dim != cfg.Dim || head.Vocab != cfg.Vocab {
		return nil, fmt.Errorf("spec: draft head (for %q) has width %d and vocabulary %d, the target %d and %d",
			head.Target, head.Dim, head.Vocab, cfg.Dim, cfg.Vocab)
	}
	out := OutputMatrix(target)
	if out == nil {
		return nil, fmt.Errorf("spec: draft head: the target has no output matrix")
	}
	if pool == nil {
		pool = kernels.Serial
	}
	k := head.K()
	p := &HeadProposer{head: head, out: out, pool: pool, a: make([]float32, k*cfg.Dim),
		z: make([]float32, k*cfg.Dim), logits: make([]float32, k*cfg.Vocab), tmp: make([]float32, cfg.Dim)}
	for j := range k {
		w := f32(fmt.Sprintf("medusa.%d.weight", j), head.W[j], head.Dim, head.Dim)
		p.w = append(p.w, &w)
		if head.U != nil {
			u := f32(fmt.Sprintf("medusa.%d.token_weight", j), head.U[j], head.Dim, head.Dim)
			p.u = append(p.u, &u)
		}
	}
	if head.TokenInput() {
		var err error
		if p.embd, err = TokenEmbedding(target); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// TokenEmbedding is m's token embedding as float32 [Vocab, Dim].
func TokenEmbedding(m *model.Model) ([]float32, error) {
	t := m.Weights["token_embd.weight"]
	if t == nil {
		return nil, fmt.Errorf("spec: draft head: the target has no token_embd.weight")
	}
	e, err := t.Float32()
	if err != nil {
		return nil, fmt.Errorf("spec: draft head: token embedding: %w", err)
	}
	return e, nil
}

// OpenHeadProposer loads the draft-head file path (LoadHead) and checks it against target.
func OpenHeadProposer(path string, target *model.Model, pool *kernels.Pool) (*HeadProposer, error) {
	head, err := LoadHead(path)
	if err != nil {
		return nil, err
	}
	return NewHeadProposer(head, target, pool)
}

// OutputMatrix is m's output projection [Vocab, Dim]: output.weight, or the token embedding
// when the two are tied.
func OutputMatrix(m *model.Model) *tensor.Tensor {
	if w := m.Weights["output.weight"]; w != nil {
		return w
	}
	return m.Weights["token_embd.weight"]
}

// NeedsHidden is true: the head drafts from the target's hidden states.
func (p *HeadProposer) NeedsHidden() bool { return true }

// Forget does nothing: the head keeps no per-sequence state.
func (p *HeadProposer) Forget(engine.SeqID) {}

// Propose drafts min(K, heads) tokens for each request with a hidden state.
func (p *HeadProposer) Propose(reqs []engine.ProposeRequest) error {
	D, V := p.head.Dim, p.head.Vocab
	for i := range reqs {
		r := &reqs[i]
		r.Draft, r.Probs = r.Draft[:0], nil
		if len(r.Hidden) != D || r.K < 1 {
			continue
		}
		n := min(r.K, p.head.K())
		if p.embd == nil { // independent heads: all in one product with the output matrix
			for j := range n {
				if err := p.forward(j, r.Hidden, -1, p.a[j*D:(j+1)*D], p.z[j*D:(j+1)*D]); err != nil {
					return err
				}
			}
			if err := p.pool.MatMul(p.logits[:n*V], p.z[:n*D], p.out, n); err != nil {
				return fmt.Errorf("spec: draft head: %w", err)
			}
			for j := range n {
				r.Draft = append(r.Draft, headArgmax(p.logits[j*V:(j+1)*V]))
			}
			continue
		}
		if len(r.Tokens) == 0 {
			continue
		}
		prev := r.Tokens[len(r.Tokens)-1]
		for j := range n { // a chain: head j reads draft j-1
			if prev < 0 || prev >= V {
				break
			}
			if err := p.forward(j, r.Hidden, prev, p.a[:D], p.z[:D]); err != nil {
				return err
			}
			if err := p.pool.MatMul(p.logits[:V], p.z[:D], p.out, 1); err != nil {
				return fmt.Errorf("spec: draft head: %w", err)
			}
			prev = headArgmax(p.logits[:V])
			r.Draft = append(r.Draft, prev)
		}
	}
	return nil
}

// forward is Head.Forward for one row on the kernels' GEMV (prev: the previous token, with
// token input).
func (p *HeadProposer) forward(j int, hidden []float32, prev int, a, z []float32) error {
	if err := p.pool.MatMul(a, hidden, p.w[j], 1); err != nil {
		return fmt.Errorf("spec: draft head: %w", err)
	}
	D := p.head.Dim
	if p.u != nil {
		if err := p.pool.MatMul(p.tmp, p.embd[prev*D:(prev+1)*D], p.u[j], 1); err != nil {
			return fmt.Errorf("spec: draft head: %w", err)
		}
		for i, v := range p.tmp {
			a[i] += v
		}
	}
	for i, b := range p.head.B[j] {
		a[i] += b
		z[i] = hidden[i] + Silu(a[i])
	}
	return nil
}

// headArgmax is the index of the largest value (the first of equals).
func headArgmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
