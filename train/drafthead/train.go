// Package drafthead trains a learned draft head (spec.Head: Medusa-1 heads) on top of a
// frozen target from the target's own hidden states: each step runs the target over one
// window of training tokens keeping its final-norm rows (model.Cache.KeepHidden), labels
// head j's row i with the token j+2 places on (the target's own greedy choice there, or the
// data's token), and takes an AdamW step of every head on its cross-entropy through the
// target's output matrix. Validation reports each head's top-1 agreement.
//
// This file is the training loop; grad.go the loss and gradient, eval.go validation.
package drafthead

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/spec"
	"github.com/llmcloud/llmcloud/train"
)

// Options configure a run.
type Options struct {
	Heads       int     // K, draft tokens per step (default 3)
	Steps       int     // optimizer steps (one target window each; 0: validate the untrained heads)
	SeqLen      int     // tokens per window (default 256, at most the target's context)
	LR          float64 // peak learning rate (default 1e-3), linear warm-up then cosine to LR/10
	Warmup      int     // warm-up steps (default Steps/20)
	WeightDecay float64 // AdamW decoupled decay of the matrices (default 0)
	ValWindows  int     // validation windows (default 16)
	// Windows, when in 1..Steps-1, runs the target over only this many training windows,
	// keeps their hidden rows in memory and cycles the steps over them (the target's forward
	// costs more than the heads' step); 0: a fresh window every step.
	Windows int
	Labels  string // "target" (default): the target's greedy tokens; "data": the data's
	// TokenInput gives each head the embedding of the token before the one it guesses
	// (spec.Head's token input: drafts chain, as in Hydra).
	TokenInput bool
	LogEvery   int // progress line every this many steps (default 10; <0 never)
	Log        io.Writer
	Pool       *kernels.Pool // nil: the target's
}

func (o *Options) defaults(ctx int) error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Heads, 3)
	def(&o.SeqLen, min(256, ctx))
	def(&o.Warmup, max(o.Steps/20, 1))
	def(&o.ValWindows, 16)
	def(&o.LogEvery, 10)
	if o.LR == 0 {
		o.LR = 1e-3
	}
	if o.Labels == "" {
		o.Labels = "target"
	}
	switch {
	case o.Heads < 1 || o.Heads > 16:
		return fmt.Errorf("drafthead: %d heads, want 1..16", o.Heads)
	case o.Steps < 0:
		return fmt.Errorf("drafthead: %d steps", o.Steps)
	case o.SeqLen < o.Heads+2 || o.SeqLen > ctx:
		return fmt.Errorf("drafthead: window of %d tokens, want %d..%d (the target's context)", o.SeqLen, o.Heads+2, ctx)
	case o.Labels != "target" && o.Labels != "data":
		return fmt.Errorf("drafthead: labels %q, want target or data", o.Labels)
	case o.ValWindows < 0 || o.Windows < 0 || o.LR < 0 || o.WeightDecay < 0:
		return fmt.Errorf("drafthead: negative val windows, learning rate or weight decay")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// Train trains o.Heads heads for target (named name in the head's metadata) on the data
// directory dir (`llmcloud data prepare` output with the target's vocabulary) and returns
// them with their validation numbers.
func Train(target *model.Model, name, dir string, o Options) (*spec.Head, *Report, error) {
	cfg := &target.Config
	if err := o.defaults(cfg.CtxLen); err != nil {
		return nil, nil, err
	}
	pool := o.Pool
	if pool == nil {
		pool = target.Pool
	}
	if pool == nil {
		pool = kernels.Default
	}
	d, closeData, err := train.OpenData(dir, 1, o.SeqLen)
	if err != nil {
		return nil, nil, err
	}
	defer closeData()
	if d.Vocab != cfg.Vocab {
		return nil, nil, fmt.Errorf("drafthead: data %s has a vocabulary of %d, the target %d", dir, d.Vocab, cfg.Vocab)
	}
	outW := spec.OutputMatrix(target)
	if outW == nil {
		return nil, nil, fmt.Errorf("drafthead: the target has no output matrix")
	}
	e, err := outW.Float32()
	if err != nil {
		return nil, nil, fmt.Errorf("drafthead: output matrix: %w", err)
	}
	head := spec.NewHead(cfg.Dim, cfg.Vocab, o.Heads, name)
	if o.TokenInput {
		head.EnableTokenInput()
	}
	fw := newFeatures(target, o.SeqLen, o.Heads, o.Labels)
	var val *valSet
	if d.Val != nil && o.ValWindows > 0 {
		if val, err = newValSet(fw, d.Val, o.ValWindows); err != nil {
			return nil, nil, err
		}
	}
	opts := make([]*adamW, o.Heads)
	for j := range opts {
		var u []float32
		if head.U != nil {
			u = head.U[j]
		}
		opts[j] = newAdamW(head.W[j], u, head.B[j])
	}
	dW, dU, db := make([]float32, cfg.Dim*cfg.Dim), make([]float32, cfg.Dim*cfg.Dim), make([]float32, cfg.Dim)
	var emb, embd []float32 // one head's previous-token rows; the target's embedding
	if o.TokenInput {
		if embd, err = spec.TokenEmbedding(target); err != nil {
			return nil, nil, err
		}
	}
	var w work
	x, y := make([]int32, o.SeqLen), make([]int32, o.SeqLen)
	cache := &windowCache{f: fw, n: o.Windows}
	run := make([]result, o.Heads) // since the last progress line
	start := time.Now()
	for step := 1; step <= o.Steps; step++ {
		hidden, labels, prev, err := cache.window(step-1, func() error {
			d.Train.Next(x, y)
			return fw.run(x, y[len(y)-1])
		})
		if err != nil {
			return nil, nil, err
		}
		lr := schedule(o, step)
		for j := range o.Heads {
			clear(dW)
			clear(dU)
			clear(db)
			emb = gatherEmb(emb, embd, prev[j], cfg.Dim)
			r := lossGrad(pool, &w, head, j, hidden, emb, labels[j], e, dW, dU, db)
			run[j].loss += r.loss
			run[j].correct += r.correct
			run[j].rows += r.rows
			opts[j].step(dW, dU, db, lr, o.WeightDecay)
		}
		if o.LogEvery > 0 && (step%o.LogEvery == 0 || step == o.Steps) {
			fmt.Fprintf(o.Log, "step %4d/%d | lr %.2e |", step, o.Steps, lr)
			for j, r := range run {
				fmt.Fprintf(o.Log, " head %d loss %.3f acc %.3f |", j, r.loss/float64(max(r.rows, 1)), float64(r.correct)/float64(max(r.rows, 1)))
			}
			el := time.Since(start)
			fmt.Fprintf(o.Log, " %.0f tok/s\n", float64(step*o.SeqLen)/el.Seconds())
			clear(run)
		}
	}
	head.Steps = o.Steps
	rep := &Report{Steps: o.Steps, Labels: o.Labels, Elapsed: time.Since(start)}
	if val != nil {
		val.eval(pool, &w, head, e, embd, rep)
		head.ValAcc = make([]float32, o.Heads)
		for j, a := range rep.ValAcc {
			head.ValAcc[j] = float32(a)
		}
	}
	return head, rep, nil
}

// schedule is step's learning rate: linear warm-up, then cosine decay to a tenth.
func schedule(o Options, step int) float64 {
	if step <= o.Warmup {
		return o.LR * float64(step) / float64(o.Warmup)
	}
	p := float64(step-o.Warmup) / float64(max(o.Steps-o.Warmup, 1))
	return o.LR * (0.1 + 0.9*0.5*(1+math.Cos(math.Pi*p)))
}

// adamW is decoupled AdamW (β = 0.9, 0.999, ε = 1e-8) over one head's W and U (decayed;
// U nil without token input) and b.
type adamW struct {
	ps, ms, vs [][]float32
	t          int
}

func newAdamW(w, u, b []float32) *adamW {
	o := &adamW{}
	for _, p := range [][]float32{w, u, b} {
		o.ps = append(o.ps, p)
		o.ms = append(o.ms, make([]float32, len(p)))
		o.vs = append(o.vs, make([]float32, len(p)))
	}
	return o
}

func (o *adamW) step(gw, gu, gb []float32, lr, wd float64) {
	o.t++
	const b1, b2, eps = 0.9, 0.999, 1e-8
	c1, c2 := 1-math.Pow(b1, float64(o.t)), 1-math.Pow(b2, float64(o.t))
	for k, g := range [][]float32{gw, gu, gb} {
		p, m, v := o.ps[k], o.ms[k], o.vs[k]
		decay := wd
		if k == 2 {
			decay = 0 // no decay of the bias
		}
		for i := range p {
			m[i] = b1*m[i] + (1-b1)*g[i]
			v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
			mh, vh := float64(m[i])/c1, float64(v[i])/c2
			p[i] -= float32(lr * (mh/(math.Sqrt(vh)+eps) + decay*float64(p[i])))
		}
	}
}
