// This file implements the training forward and backward passes: the activations every layer
// keeps for its backward (one allocation, carved into views per block), the scratch of the
// backward pass, and Forward/Backward wiring the layers of layers.go and attention.go.
package nn

import (
	"fmt"

	"github.com/llmcloud/llmcloud/model"
)

// blockActs are what one block keeps from Forward for Backward (N = B*T rows).
type blockActs struct {
	xn1, rstd1 []float32 // attention RMSNorm output (N,D) and 1/rms (N)
	q, k, v    []float32 // (N,QD) and (N,KVD), q and k after RoPE
	att        []float32 // softmax probabilities (B,H,T,T)
	y          []float32 // attention output before attn_output (N,QD)
	xmid       []float32 // residual after the attention branch (N,D)
	xn2, rstd2 []float32 // FFN RMSNorm output (N,D), (N)
	gate, up   []float32 // FFN pre-activations (N,F)
	h          []float32 // SiLU(gate)·up (N,F)
}

// acts are all activations of a Forward, carved from one buffer.
type acts struct {
	buf    []float32
	resid  [][]float32 // nb+1 residual streams (N,D): resid[i] enters held block i, resid[nb] leaves
	blocks []blockActs
	xf     []float32 // final RMSNorm output (N,D)
	rstdf  []float32 // (N)
	logits []float32 // (N,V)
	probs  []float32 // softmax of the logits (N,V), turned into dlogits by Backward
	losses []float32 // per-row loss (N)
}

// carve hands out consecutive views of buf (a nil buf only counts the total).
type carver struct {
	buf []float32
	off int
}

func (c *carver) take(n int) []float32 {
	c.off += n
	if c.buf == nil {
		return nil
	}
	return c.buf[c.off-n : c.off : c.off]
}

// alloc carves the activations of nb blocks for B x T tokens, and of the final norm, logits
// and loss when last. With recompute every block shares one set of block activations:
// shared's when not nil (another slot's), else one carved here.
func (a *acts) alloc(c *model.Config, B, T, nb int, last, recompute bool, shared *blockActs) {
	N, D, QD, KVD, F := B*T, c.Dim, c.QDim(), c.KVDim(), c.FFN
	var cv carver
	for pass := 0; pass < 2; pass++ {
		a.resid, a.blocks = nil, nil
		for l := 0; l <= nb; l++ {
			a.resid = append(a.resid, cv.take(N*D))
		}
		for l := 0; l < nb; l++ {
			if recompute && shared != nil {
				a.blocks = append(a.blocks, *shared)
				continue
			}
			if recompute && l > 0 {
				a.blocks = append(a.blocks, a.blocks[0])
				continue
			}
			a.blocks = append(a.blocks, blockActs{
				xn1: cv.take(N * D), rstd1: cv.take(N), q: cv.take(N * QD), k: cv.take(N * KVD),
				v: cv.take(N * KVD), att: cv.take(B * c.Heads * T * T), y: cv.take(N * QD),
				xmid: cv.take(N * D), xn2: cv.take(N * D), rstd2: cv.take(N),
				gate: cv.take(N * F), up: cv.take(N * F), h: cv.take(N * F),
			})
		}
		if last {
			a.xf, a.rstdf = cv.take(N*D), cv.take(N)
			a.logits, a.probs, a.losses = cv.take(N*c.Vocab), cv.take(N*c.Vocab), cv.take(N)
		}
		if pass == 0 {
			a.buf = make([]float32, cv.off)
			cv = carver{buf: a.buf}
		}
	}
}

// grads is the scratch of Backward (activation gradients, reused by every block).
type grads struct {
	dres, dxn, dy, dq, dk, dv, dh, dgate, dup, attn []float32
}

func (g *grads) alloc(c *model.Config, B, T int) {
	N, D, QD, KVD, F := B*T, c.Dim, c.QDim(), c.KVDim(), c.FFN
	g.dres, g.dxn, g.dy = make([]float32, N*D), make([]float32, N*D), make([]float32, N*QD)
	g.dq, g.dk, g.dv = make([]float32, N*QD), make([]float32, N*KVD), make([]float32, N*KVD)
	g.dh, g.dgate, g.dup = make([]float32, N*F), make([]float32, N*F), make([]float32, N*F)
	g.attn = make([]float32, B*c.KVHeads*T*T)
}

// Validate reports whether Forward accepts this batch: 1 <= B <= maxB, 1 <= T <= maxT,
// B*T tokens (and targets, when not nil) in [0, Vocab).
func (m *Model) Validate(tokens, targets []int32, B, T int) error {
	if err := m.checkShape(B, T); err != nil {
		return err
	}
	if err := m.checkIDs("token", tokens, B*T); err != nil {
		return err
	}
	if targets != nil {
		return m.checkIDs("target", targets, B*T)
	}
	return nil
}

func (m *Model) checkShape(B, T int) error {
	if B < 1 || B > m.maxB || T < 1 || T > m.maxT {
		return fmt.Errorf("nn: batch %d x %d outside the allocated 1..%d x 1..%d", B, T, m.maxB, m.maxT)
	}
	return nil
}

// checkIDs checks that ids holds n ids in [0, Vocab).
func (m *Model) checkIDs(what string, ids []int32, n int) error {
	if len(ids) < n {
		return fmt.Errorf("nn: %d %ss for %d positions", len(ids), what, n)
	}
	for i, t := range ids[:n] {
		if t < 0 || int(t) >= m.Cfg.Vocab {
			return fmt.Errorf("nn: %s %d at position %d outside the vocabulary [0, %d)", what, t, i, m.Cfg.Vocab)
		}
	}
	return nil
}

// Forward runs tokens (B,T) through the model, keeping the activations, and returns the mean
// cross-entropy against targets (B,T) over the B*T positions; with targets nil it computes the
// logits only and returns 0. Each row of the batch is an independent sequence starting at
// position 0. Input that Validate rejects, or a model that is a pipeline stage (use
// StageForward), is a programming error and panics with its message.
func (m *Model) Forward(tokens, targets []int32, B, T int) float32 {
	if !m.first || !m.last {
		panic("nn: Forward on a pipeline stage (use StageForward)")
	}
	if err := m.Validate(tokens, targets, B, T); err != nil {
		panic(err.Error())
	}
	if m.prog != nil {
		m.B, m.T, m.lastSlot = B, T, -1
		m.slots[0].pending = false
		m.graphPending = targets != nil
		defer commPanic()
		return m.prog.Forward(tokens, targets, B, T)
	}
	m.setInputs(0, tokens, targets, B, T)
	return m.forward(0)
}

// setInputs copies a micro-batch's inputs into slot si.
func (m *Model) setInputs(si int, tokens, targets []int32, B, T int) {
	sl := &m.slots[si]
	sl.B, sl.T = B, T
	if tokens != nil {
		copy(sl.tokens, tokens[:B*T])
	}
	sl.hasTargets = targets != nil
	if sl.hasTargets {
		copy(sl.targets, targets[:B*T])
	}
}

// forward runs slot si's inputs (tokens on the first stage, resid[0] on the others) through
// the held blocks, and on the last stage the head and the loss, which it returns.
func (m *Model) forward(si int) float32 {
	sl := &m.slots[si]
	c, p, a := &m.lc, m.pool, &sl.acts
	B, T := sl.B, sl.T
	N, D, V := B*T, c.Dim, c.Vocab
	m.B, m.T, m.lastSlot = B, T, si
	sl.pending = true
	if m.first {
		m.use(0, false)
		if m.tp != nil {
			m.tp.embeddingForward(a.resid[0], m.embd.W, sl.tokens, N, D)
		} else {
			embeddingForward(a.resid[0], m.embd.W, sl.tokens, N, D)
		}
	}
	for l := range m.blocks {
		m.use(m.lo+1+l, false)
		m.blockForward(a, l, B, T)
	}
	if !m.last {
		return 0
	}
	m.use(c.Layers+1, false)
	rmsnormForward(p, a.xf, a.rstdf, a.resid[len(m.blocks)], m.outNorm.W, N, D, c.NormEps)
	if c.Tied {
		m.use(0, false)
	}
	linearForward(p, a.logits, a.xf, m.out.W, N, D, V)
	if !sl.hasTargets {
		sl.pending = false
		return 0
	}
	if m.tp != nil {
		return m.tp.crossEntropyForward(p, a.losses, a.probs, a.logits, sl.targets, N, V)
	}
	return crossEntropyForward(p, a.losses, a.probs, a.logits, sl.targets, N, V)
}

// blockForward runs held block l on its input a.resid[l] into a.blocks[l] and a.resid[l+1].
func (m *Model) blockForward(a *acts, l, B, T int) {
	c, p := &m.lc, m.pool
	N, D, QD, KVD, F := B*T, c.Dim, c.QDim(), c.KVDim(), c.FFN
	s := attnShape{B: B, T: T, H: c.Heads, KVH: c.KVHeads, HD: c.HeadDim}
	w, ba, x := &m.blocks[l], &a.blocks[l], a.resid[l]
	rmsnormForward(p, ba.xn1, ba.rstd1, x, w.attnNorm.W, N, D, c.NormEps)
	linearForward(p, ba.q, ba.xn1, w.wq.W, N, D, QD)
	linearForward(p, ba.k, ba.xn1, w.wk.W, N, D, KVD)
	linearForward(p, ba.v, ba.xn1, w.wv.W, N, D, KVD)
	ropeForward(p, ba.q, m.cs, N, T, c.Heads, c.HeadDim)
	ropeForward(p, ba.k, m.cs, N, T, c.KVHeads, c.HeadDim)
	attentionForward(p, ba.y, ba.att, ba.q, ba.k, ba.v, s)
	linearForward(p, ba.xmid, ba.y, w.wo.W, N, QD, D)
	m.tp.sum(ba.xmid[:N*D], "attn_output")
	residualForward(ba.xmid[:N*D], x[:N*D], ba.xmid[:N*D])
	rmsnormForward(p, ba.xn2, ba.rstd2, ba.xmid, w.ffnNorm.W, N, D, c.NormEps)
	linearForward(p, ba.gate, ba.xn2, w.gate.W, N, D, F)
	linearForward(p, ba.up, ba.xn2, w.up.W, N, D, F)
	swigluForward(p, ba.h, ba.gate, ba.up, N, F)
	linearForward(p, a.resid[l+1], ba.h, w.down.W, N, F, D)
	m.tp.sum(a.resid[l+1][:N*D], "ffn_down")
	residualForward(a.resid[l+1][:N*D], ba.xmid[:N*D], a.resid[l+1][:N*D])
}

// Backward adds d(mean loss)/d(parameters) of the last Forward to the gradients (call ZeroGrad
// between optimizer steps; without it, gradients accumulate over micro-batches). It runs once
// per Forward: calling it without a Forward with targets, or twice, is a programming error and
// panics.
func (m *Model) Backward() {
	if m.prog != nil && m.graphPending {
		m.graphPending = false
		defer commPanic()
		m.prog.Backward()
		return
	}
	if !m.first || !m.last || !m.slots[0].pending {
		panic("nn: Backward needs a Forward with targets (and runs once per Forward)")
	}
	m.backward(0, nil, 1)
}

// backward runs the backward pass of slot si: on the last stage from the gradient of
// scale·(mean loss), on the others from dout (N,D). It returns the gradient with respect to
// the stage's input (N,D, in the shared scratch), nil on the first stage.
func (m *Model) backward(si int, dout []float32, scale float32) []float32 {
	sl := &m.slots[si]
	sl.pending = false
	c, p, a, g := &m.lc, m.pool, &sl.acts, &m.grad
	B, T := sl.B, sl.T
	N, D, QD, KVD, F, V := B*T, c.Dim, c.QDim(), c.KVDim(), c.FFN, c.Vocab
	s := attnShape{B: B, T: T, H: c.Heads, KVH: c.KVHeads, HD: c.HeadDim}
	dres := g.dres[:N*D]
	if m.last {
		m.use(c.Layers+1, true)
		if c.Tied {
			m.use(0, true)
		}
		dlogits := a.probs // the probabilities become dlogits
		if m.tp != nil {
			m.tp.crossEntropyBackward(p, dlogits, sl.targets, N, V, scale/float32(N))
		} else {
			crossEntropyBackward(p, dlogits, sl.targets, N, V, scale/float32(N))
		}
		// The output projection: dxf (in g.dxn) = dlogits·W, dW += dlogitsᵀ·xf.
		linearBackward(p, g.dxn, m.out.G, dlogits, a.xf, m.out.W, N, D, V, false)
		m.tp.sum(g.dxn[:N*D], "output input gradient")
		clear(dres)
		rmsnormBackward(p, dres, m.outNorm.G, g.dxn, a.resid[len(m.blocks)], m.outNorm.W, a.rstdf, N, D)
		m.ready(c.Layers + 1)
		if c.Tied && !m.first {
			m.ready(0)
		}
	} else {
		copy(dres, dout[:N*D])
	}
	for l := len(m.blocks) - 1; l >= 0; l-- {
		m.use(m.lo+1+l, true)
		if m.opt.Recompute {
			m.blockForward(a, l, B, T) // the block's activations again, from its input
		}
		w, ba := &m.blocks[l], &a.blocks[l]
		// FFN branch: resid[l+1] = xmid + h·downᵀ.
		linearBackward(p, g.dh, w.down.G, dres, ba.h, w.down.W, N, F, D, false)
		clear(g.dgate[:N*F])
		clear(g.dup[:N*F])
		swigluBackward(p, g.dgate, g.dup, g.dh, ba.gate, ba.up, N*F)
		linearBackward(p, g.dxn, w.gate.G, g.dgate, ba.xn2, w.gate.W, N, D, F, false)
		linearBackward(p, g.dxn, w.up.G, g.dup, ba.xn2, w.up.W, N, D, F, true)
		m.tp.sum(g.dxn[:N*D], "ffn input gradient")
		rmsnormBackward(p, dres, w.ffnNorm.G, g.dxn, ba.xmid, w.ffnNorm.W, ba.rstd2, N, D)
		// Attention branch: xmid = resid[l] + y·woᵀ.
		linearBackward(p, g.dy, w.wo.G, dres, ba.y, w.wo.W, N, QD, D, false)
		clear(g.dq[:N*QD])
		clear(g.dk[:N*KVD])
		clear(g.dv[:N*KVD])
		attentionBackward(p, g.dq, g.dk, g.dv, g.dy, ba.att, ba.q, ba.k, ba.v, g.attn, s)
		ropeBackward(p, g.dq, m.cs, N, T, c.Heads, c.HeadDim)
		ropeBackward(p, g.dk, m.cs, N, T, c.KVHeads, c.HeadDim)
		linearBackward(p, g.dxn, w.wq.G, g.dq, ba.xn1, w.wq.W, N, D, QD, false)
		linearBackward(p, g.dxn, w.wk.G, g.dk, ba.xn1, w.wk.W, N, D, KVD, true)
		linearBackward(p, g.dxn, w.wv.G, g.dv, ba.xn1, w.wv.W, N, D, KVD, true)
		m.tp.sum(g.dxn[:N*D], "attention input gradient")
		rmsnormBackward(p, dres, w.attnNorm.G, g.dxn, a.resid[l], w.attnNorm.W, ba.rstd1, N, D)
		m.ready(m.lo + 1 + l)
	}
	if !m.first {
		return dres
	}
	if !c.Tied || !m.last {
		m.use(0, true)
	}
	if m.tp != nil {
		m.tp.embeddingBackward(m.embd.G, dres, sl.tokens, N, D)
	} else {
		embeddingBackward(m.embd.G, dres, sl.tokens, N, D)
	}
	m.ready(0)
	return nil
}
