// This file runs moe, the mixture-of-experts feed-forward (graph/ops_moe.go), grouping the
// step's rows by expert (the moe_align_block_size idea of vLLM's fused MoE): the router's
// logits for every row in one matmul, each row's experts and weights chosen on its own, then
// for each expert that any row picked, its rows gathered into one block and run through the
// expert's gate, up and down matrices by the ordinary matmul kernels (each expert's 2-D slice
// of the stacked weights, so every weight dtype works and an expert's weights are read once
// per step for all its rows), the results scattered back, weighted, into the rows' outputs.
//
// A shared expert (Qwen2-MoE) runs over all the step's rows at once after the routed ones, its
// output (scaled per row by the sigmoid of its gate when there is one) added last.
//
// A row's output is the sum of its experts' contributions in ascending expert order; with
// Options.Invariant the matmuls are the batch-invariant ones, so a row's output is the same
// bits whatever else is in the step.
package exec

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

type moeOp struct {
	x, out         int
	name           string // the router weight's name (expert loads are kept under it)
	router         *tensor.Tensor
	gate, up, down []*tensor.Tensor // per expert: [F,D], [F,D], [D,F]
	e, f, d, k     int
	sigmoid, norm  bool
	scale          float64
	logits, wts    []float32 // [n,E] router logits; [n,k] chosen weights
	sel            []int     // [n,k] chosen experts
	count, start   []int     // rows per expert; the first of each expert's rows in order
	order          []int     // the (row, choice) indexes n*k grouped by expert, rows ascending
	xs, g, u, ys   []float32 // an expert's gathered rows, gate and up, and results
	scores         []float64
	loads          []uint64 // rows routed to each expert, over the program's runs
	outsBuf, xsBuf [][]float32
	wsBuf          []*tensor.Tensor
	fill           []int
	// The shared expert (nil: none): gate, up [Fs,D], down [D,Fs], its gate row [1,D] (nil:
	// unscaled), and its buffers.
	sGate, sUp, sDown, sInp *tensor.Tensor
	sf                      int
	sg, su, sy, sl          []float32
	// DeepSeek-V3 routing (graph/ops_moe_route.go): the selection bias (nil: none), grouped
	// top-k, and the biased (masked) scores the choice is made on.
	bias                         []float32
	groups, groupsUsed, groupTop int
	choice                       []float64
	// gpt-oss (nil: none): biases of the router [E], the experts' gate, up [E*F] and down
	// [E*D]; the swiglu_oai activation.
	rb, gb, ub, db []float32
	oai            *swigluOAIOp
	// Experts split across the workers (moe_parallel.go): per-worker buffers, every (row,
	// choice)'s expert output [n*k, D], the experts with rows, most rows first.
	scratch []moeScratch
	yAll    []float32
	byCount []int
	packed  bool // Q8_0/Q4_0 experts: not split by expert
}

func (p *Program) compileMoE(n *graph.Node) (instr, error) {
	o := &moeOp{x: p.ids[n.Args[0]], out: p.ids[n.Outs[0]], k: int(n.Attrs.Int("experts_used", 0)),
		sigmoid: n.Attrs.Str("gating", graph.MoESoftmax) == graph.MoESigmoid, norm: n.Attrs.Int("norm", 0) != 0,
		scale: n.Attrs.Float("scale", 1), name: n.Args[1].Name}
	var err error
	if o.router, err = p.weightArg(n, 1); err != nil {
		return nil, err
	}
	// Expert parallelism: the stacks hold experts [lo, lo+held) of the router's; the others
	// are nil slices, which run skips (their rows' share of the sum is another rank's).
	lo, all := int(n.Attrs.Int("expert_lo", 0)), o.router.Shape[0]
	for i, dst := range []*[]*tensor.Tensor{&o.gate, &o.up, &o.down} {
		w := p.vals[p.ids[n.Args[2+i]]].weight
		if w == nil || len(w.Shape) != 3 || lo < 0 || lo+w.Shape[0] > all {
			return nil, fmt.Errorf("argument %s: the experts must be a stacked [E,rows,cols] weight, the router's %d experts from expert_lo %d", n.Args[2+i], all, lo)
		}
		*dst = make([]*tensor.Tensor, lo, all)
		for e := 0; e < w.Shape[0]; e++ {
			s, err := w.Slice(e)
			if err != nil {
				return nil, err
			}
			if _, err := s.Type.RowBytes(s.Shape[1]); err != nil {
				return nil, fmt.Errorf("weight %s: %w", w.Name, err)
			}
			*dst = append(*dst, s)
		}
		*dst = (*dst)[:all]
	}
	o.e, o.f, o.d = all, o.gate[lo].Shape[0], o.gate[lo].Shape[1]
	nargs := len(n.Args) - graph.MoETail(n.Attrs)
	if graph.MoEBiasArgs(n.Attrs) == 1 {
		last := n.Args[len(n.Args)-1]
		if o.bias = p.vals[p.ids[last]].vec; len(o.bias) != o.e {
			return nil, fmt.Errorf("argument %s: the selection bias must be an f32[%d] weight", last, o.e)
		}
	}
	if graph.MoEExpertBiases(n.Attrs) {
		for i, dst := range []*[]float32{&o.rb, &o.gb, &o.ub, &o.db} {
			v := n.Args[nargs+i]
			if *dst = p.vals[p.ids[v]].vec; *dst == nil {
				return nil, fmt.Errorf("argument %s: the expert biases must be f32 weights", v)
			}
		}
	}
	if n.Attrs.Str("act", graph.MoESwiGLU) == graph.MoESwiGLUOAI {
		o.oai = &swigluOAIOp{alpha: float32(n.Attrs.Float("alpha", 1.702)), limit: float32(n.Attrs.Float("limit", 7))}
	}
	o.groups, o.groupsUsed, o.groupTop = graph.MoEGroups(n.Attrs)
	for _, w := range [][]*tensor.Tensor{o.gate, o.up, o.down} {
		o.packed = o.packed || w[lo].Type == tensor.Q8_0 || w[lo].Type == tensor.Q4_0
	}
	if nargs >= 8 {
		if o.sGate, err = p.weightArg(n, 5); err != nil {
			return nil, err
		}
		if o.sUp, err = p.weightArg(n, 6); err != nil {
			return nil, err
		}
		if o.sDown, err = p.weightArg(n, 7); err != nil {
			return nil, err
		}
		if nargs == 9 {
			if o.sInp, err = p.weightArg(n, 8); err != nil {
				return nil, err
			}
		}
		o.sf = o.sGate.Shape[0]
	}
	o.count, o.start = make([]int, o.e), make([]int, o.e+1)
	o.scores, o.choice, o.loads = make([]float64, o.e), make([]float64, o.e), make([]uint64, o.e)
	o.outsBuf, o.wsBuf = make([][]float32, 2, 2*o.k+3), make([]*tensor.Tensor, 2, 2*o.k+3)
	return o, nil
}

// plain reports that the op has none of gpt-oss's extras (router and expert biases, the
// swiglu_oai activation), which only run's grouped path applies: the one-row decode path
// (moe_decode.go) and the expert-split path (moe_parallel.go) run plain SwiGLU experts.
func (o *moeOp) plain() bool { return o.rb == nil && o.gb == nil && o.oai == nil }

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

func (o *moeOp) matmul(p *Program, out, x []float32, w *tensor.Tensor, m int) error {
	if p.invariant {
		return p.pool.MatMulInvariant(out, x, w, m)
	}
	return p.pool.MatMul(out, x, w, m)
}

func (o *moeOp) run(p *Program) error {
	x, out := p.f32(o.x), p.f32(o.out)
	n, E, F, D, k := len(x)/o.d, o.e, o.f, o.d, o.k
	if n == 1 && !p.invariant && o.plain() {
		return o.decode(p, x, out)
	}
	o.logits, o.wts = grow(o.logits, n*E), grow(o.wts, n*k)
	if cap(o.sel) < n*k {
		o.sel, o.order = make([]int, n*k), make([]int, n*k)
	}
	o.sel, o.order = o.sel[:n*k], o.order[:n*k]
	if err := o.matmul(p, o.logits, x, o.router, n); err != nil {
		return err
	}
	if o.rb != nil {
		for r := 0; r < n; r++ {
			kernels.Axpy(o.logits[r*E:(r+1)*E], 1, o.rb)
		}
	}
	clear(o.count)
	for r := 0; r < n; r++ {
		o.route(o.logits[r*E:(r+1)*E], o.sel[r*k:(r+1)*k], o.wts[r*k:(r+1)*k])
		for _, e := range o.sel[r*k : (r+1)*k] {
			o.count[e]++
		}
	}
	// Group the (row, choice) pairs by expert, rows ascending within an expert.
	o.start[0] = 0
	for e := 0; e < E; e++ {
		o.start[e+1] = o.start[e] + o.count[e]
	}
	o.fill = append(o.fill[:0], o.start[:E]...)
	fill := o.fill
	for i, e := range o.sel {
		o.order[fill[e]] = i
		fill[e]++
	}
	if o.plain() && o.expertsParallel(p, n*k) {
		if err := o.runParallel(p, x, out, n); err != nil {
			return err
		}
		if o.sGate != nil {
			return o.shared(p, x, out, n)
		}
		return nil
	}
	clear(out[:n*D])
	most := 0
	for _, c := range o.count {
		most = max(most, c)
	}
	o.xs, o.ys = grow(o.xs, most*D), grow(o.ys, most*D)
	o.g, o.u = grow(o.g, most*F), grow(o.u, most*F)
	for e := 0; e < E; e++ {
		c := o.count[e]
		if c == 0 {
			continue
		}
		o.loads[e] += uint64(c)
		if o.gate[e] == nil { // another rank's expert
			continue
		}
		idx := o.order[o.start[e]:o.start[e+1]]
		for i, sc := range idx {
			r := sc / k
			copy(o.xs[i*D:(i+1)*D], x[r*D:(r+1)*D])
		}
		xs, g, u, ys := o.xs[:c*D], o.g[:c*F], o.u[:c*F], o.ys[:c*D]
		if p.invariant && c == 1 {
			if err := p.pool.MatMulInvariant(g, xs, o.gate[e], c); err != nil {
				return err
			}
			if err := p.pool.MatMulInvariant(u, xs, o.up[e], c); err != nil {
				return err
			}
		} else {
			o.outsBuf[0], o.outsBuf[1] = g, u
			o.wsBuf[0], o.wsBuf[1] = o.gate[e], o.up[e]
			err := p.pool.MatMulShared(o.outsBuf, xs, o.wsBuf, c)
			clear(o.outsBuf)
			if err != nil {
				return err
			}
		}
		if o.gb != nil {
			for i := 0; i < c; i++ {
				kernels.Axpy(g[i*F:(i+1)*F], 1, o.gb[e*F:(e+1)*F])
				kernels.Axpy(u[i*F:(i+1)*F], 1, o.ub[e*F:(e+1)*F])
			}
		}
		for i := 0; i < c; i++ {
			if o.oai != nil {
				o.oai.span(g[i*F:(i+1)*F], g[i*F:(i+1)*F], u[i*F:(i+1)*F])
			} else {
				kernels.SwiGLU(g[i*F:(i+1)*F], g[i*F:(i+1)*F], u[i*F:(i+1)*F])
			}
		}
		if err := o.matmul(p, ys, g, o.down[e], c); err != nil {
			return err
		}
		if o.db != nil {
			for i := 0; i < c; i++ {
				kernels.Axpy(ys[i*D:(i+1)*D], 1, o.db[e*D:(e+1)*D])
			}
		}
		for i, sc := range idx {
			r, w := sc/k, o.wts[sc]
			dst, src := out[r*D:(r+1)*D], ys[i*D:(i+1)*D]
			for j, v := range src {
				dst[j] += w * v
			}
		}
	}
	if o.sGate != nil {
		return o.shared(p, x, out, n)
	}
	return nil
}

// shared adds the shared expert's output over all n rows of x to out.
func (o *moeOp) shared(p *Program, x, out []float32, n int) error {
	F, D := o.sf, o.d
	o.sg, o.su, o.sy = grow(o.sg, n*F), grow(o.su, n*F), grow(o.sy, n*D)
	if p.invariant && n == 1 {
		if err := p.pool.MatMulInvariant(o.sg, x, o.sGate, n); err != nil {
			return err
		}
		if err := p.pool.MatMulInvariant(o.su, x, o.sUp, n); err != nil {
			return err
		}
	} else {
		o.outsBuf[0], o.outsBuf[1] = o.sg, o.su
		o.wsBuf[0], o.wsBuf[1] = o.sGate, o.sUp
		err := p.pool.MatMulShared(o.outsBuf, x, o.wsBuf, n)
		clear(o.outsBuf)
		if err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		kernels.SwiGLU(o.sg[i*F:(i+1)*F], o.sg[i*F:(i+1)*F], o.su[i*F:(i+1)*F])
	}
	if err := o.matmul(p, o.sy, o.sg, o.sDown, n); err != nil {
		return err
	}
	if o.sInp != nil {
		o.sl = grow(o.sl, n)
		if err := o.matmul(p, o.sl, x, o.sInp, n); err != nil {
			return err
		}
	}
	for r := 0; r < n; r++ {
		s := float32(1)
		if o.sInp != nil {
			s = float32(1 / (1 + math.Exp(-float64(o.sl[r]))))
		}
		dst, src := out[r*D:(r+1)*D], o.sy[r*D:(r+1)*D]
		for j, v := range src {
			dst[j] += s * v
		}
	}
	return nil
}

// ExpertLoads returns, per moe node (by its router weight's name), the rows routed to each
// expert over all of p's runs so far.
func (p *Program) ExpertLoads() map[string][]uint64 {
	out := map[string][]uint64{}
	for _, in := range p.code {
		if o, ok := in.(*moeOp); ok {
			out[o.name] = append([]uint64(nil), o.loads...)
		}
	}
	return out
}
