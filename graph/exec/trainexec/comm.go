// This file runs tensor parallelism's ops (graph/ops_comm.go) over the group of Options.TP,
// as train/nn's hand-written tensor-parallel layers did until main be94aba (the same float
// operations in the same order, so the results were bit for bit theirs): tp_copy is its
// argument's buffer, an all_reduce_sum reduces in place when it is its argument's only user,
// the vocab-parallel embedding and cross-entropy are the loops those layers had. A failed
// collective panics with a *CommError; train/nn turns it into its own.
package trainexec

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// CommError is the value Forward and Backward panic with when a collective of the
// tensor-parallel group fails.
type CommError struct {
	Op  string // which reduction: "embedding", "attn_output", "ffn_down", "loss max", ...
	Err error
}

func (e *CommError) Error() string {
	return fmt.Sprintf("trainexec: tensor-parallel %s: %v", e.Op, e.Err)
}
func (e *CommError) Unwrap() error { return e.Err }

func (p *Program) reduce(x []float32, what string, max bool) {
	var err error
	if p.tp == nil {
		err = fmt.Errorf("no tensor-parallel group bound")
	} else if max {
		err = p.tp.AllReduceMax(x)
	} else {
		err = p.tp.AllReduceSum(x)
	}
	if err != nil {
		panic(&CommError{Op: what, Err: err})
	}
}

// compileComm compiles the ops of tensor parallelism (ok false: n is not one of them).
func (p *Program) compileComm(n *graph.Node, f *fusion) (fn func(), ok bool, err error) {
	a, out := n.Args, (*graph.Value)(nil)
	if len(n.Outs) > 0 {
		out = n.Outs[0]
	}
	switch n.Op {
	case "tp_copy":
		if a[0].Kind != graph.KindResult {
			p.buf(a[0]) // an input (a stage's output gradient) is not planned: its buffer now, for the alias
		}
		p.alias[out] = a[0]
		return nil, true, nil
	case "all_reduce_sum":
		what := n.Attrs.Str("what", "all_reduce_sum")
		x := a[0]
		inPlace := f.uses[x] == 1 && x.Kind == graph.KindResult
		if inPlace {
			p.alias[out] = x
		}
		sink := f.sink[out] // a weight's gradient (a q/k norm's): reduced, then added into G
		return func() {
			if !inPlace {
				copy(p.cur(out), p.cur(x))
			}
			p.reduce(p.cur(out), what, false)
			if sink != nil {
				kernels.Add(sink, p.cur(out))
			}
		}, true, nil
	case "embedding_shard":
		lo := int(n.Attrs.Int("lo", 0))
		return func() {
			C := p.inner[out]
			o, tab, ids := p.buf(out), p.buf(a[0]), p.ints[a[1].Name]
			V := len(tab) / C
			for i := 0; i < p.N; i++ {
				row := o[i*C : (i+1)*C]
				if t := int(ids[i]) - lo; t >= 0 && t < V {
					copy(row, tab[t*C:(t+1)*C])
				} else {
					clear(row)
				}
			}
		}, true, nil
	case "embedding_shard_grad":
		lo := int(n.Attrs.Int("lo", 0))
		sink := f.sink[out]
		return func() {
			dst := sink
			if dst == nil {
				dst = p.cur(out)
				clear(dst)
			}
			C := p.inner[a[0]]
			dy, ids, V := p.buf(a[0]), p.ints[a[1].Name], len(dst)/C
			for i := 0; i < p.N; i++ {
				if t := int(ids[i]) - lo; t >= 0 && t < V {
					kernels.Add(dst[t*C:(t+1)*C], dy[i*C:(i+1)*C])
				}
			}
		}, true, nil
	case "cross_entropy_shard":
		return p.crossEntropyShard(n), true, nil
	case "cross_entropy_shard_grad":
		fn, err := p.crossEntropyShardGrad(n)
		return fn, true, err
	}
	return nil, false, nil
}

// crossEntropyShard is tp_layers.go's crossEntropyForward: the row maxima reduced (max), then
// the sums of exponentials and the target logits (one sum of 2N values).
func (p *Program) crossEntropyShard(n *graph.Node) func() {
	z, lo := n.Args[0], int(n.Attrs.Int("lo", 0))
	V, maxN := p.inner[z], p.maxB*p.maxT
	probs := make([]float32, maxN*V)
	losses, mxb, red := make([]float32, maxN), make([]float32, maxN), make([]float32, 2*maxN)
	p.side[n] = probs
	return func() {
		if !p.hasTargets {
			return
		}
		N, logits, targets := p.N, p.buf(z), p.ints[n.Args[1].Name]
		mx, se, zt := mxb[:N], red[:N], red[N:2*N]
		p.pool.For(N, kernels.TrainRowChunk(V), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				mx[i] = kernels.Max(logits[i*V : (i+1)*V])
			}
		})
		p.reduce(mx, "loss max", true)
		p.pool.For(N, kernels.TrainRowChunk(V), func(l, h int) {
			for i := l; i < h; i++ {
				row, pr := logits[i*V:(i+1)*V], probs[i*V:(i+1)*V]
				copy(pr, row)
				se[i] = float32(kernels.ExpSub(pr, mx[i]))
				zt[i] = 0
				if t := int(targets[i]) - lo; t >= 0 && t < V {
					zt[i] = row[t]
				}
			}
		})
		p.reduce(red[:2*N], "loss sums", false)
		p.pool.For(N, kernels.TrainRowChunk(V), func(l, h int) {
			for i := l; i < h; i++ {
				kernels.Scale(probs[i*V:(i+1)*V], 1/se[i])
				losses[i] = float32(math.Log(float64(se[i]))) + mx[i] - zt[i]
			}
		})
		var sum float64
		for _, l := range losses[:N] {
			sum += float64(l)
		}
		p.loss = float32(sum / float64(N))
		p.buf(n.Outs[0])[0] = p.loss
	}
}

// crossEntropyShardGrad turns the forward's probabilities into this rank's dlogits in place.
func (p *Program) crossEntropyShardGrad(n *graph.Node) (func(), error) {
	dl, z, t := n.Args[0], n.Args[1], n.Args[2]
	var fw *graph.Node // the loss is computed once: the forward node of these arguments
	for _, m := range p.g.Nodes {
		if m.Op == "cross_entropy_shard" && m.Args[0] == z && m.Args[1] == t {
			fw = m
		}
	}
	if fw == nil || p.side[fw] == nil {
		return nil, fmt.Errorf("no forward cross_entropy_shard of %s", z)
	}
	probs := p.side[fw]
	p.bufs[n.Outs[0]] = probs
	V, lo := p.inner[z], int(n.Attrs.Int("lo", 0))
	return func() {
		N, targets, dloss := p.N, p.ints[t.Name], p.scale*p.buf(dl)[0]/float32(p.N)
		p.pool.For(N, kernels.TrainRowChunk(V), func(l, h int) {
			for i := l; i < h; i++ {
				d := probs[i*V : (i+1)*V]
				kernels.Scale(d, dloss)
				if c := int(targets[i]) - lo; c >= 0 && c < V {
					d[c] -= dloss
				}
			}
		})
	}, nil
}
