// Package trainexec is the training executor: it differentiates a model graph (graph.WithLoss
// then graph.Grad) and runs the forward and backward graph with F32 weights (a frozen matrix
// may stay in its stored type, e.g. Q4_K: quant.go) over B whole sequences of T rows, adding
// the weight gradients into buffers the trainer owns.
//
// Every op runs the same float operations, in the same order, as train/nn's hand-written
// layers did until main be94aba (both called kernels/train_rows.go and
// kernels/train_attention.go), so a step through the graph gave their loss and gradients bit
// for bit; the tests keep those numbers (testdata/nn_step.golden). Where those layers
// accumulated (the input gradient of the matmuls sharing an input, a weight gradient added
// into G) the executor recognises the graph's sum of contributions and accumulates in the same
// order (fuse.go). train/nn's model runs this executor; it has no other forward.
//
// This file holds New, the value buffers and Forward/Backward; ops.go compiles each node.
package trainexec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// The graph's inputs the executor feeds, and the value differentiated.
const (
	InputTokens    = "tokens"     // i32[n]
	InputPositions = "pos"        // i32[n]: row i has position i mod T
	InputLogitRows = "logit_rows" // i32[s]: every row (s = n)
	InputTargets   = "targets"    // i32[n]: added by graph.WithLoss
	OutputLogits   = "logits"     // the value the loss is taken of
)

// Param is one weight of the graph: its values and, for a trained weight, the gradient buffer
// Backward adds into (nil G: a constant, e.g. rope_freqs.weight). A frozen matrix may instead
// be bound in its stored type (Q, W nil: a quantized base under low-rank adapters, QLoRA): the
// matmuls reading it run the serving kernels (kernels.Pool.MatMul forward, MatMulDX for the
// input gradient) and an embedding dequantizes the rows it looks up; any other op refuses it.
type Param struct {
	Name string
	W, G []float32
	Q    *tensor.Tensor
}

// Program is a model graph with its backward, compiled for batches of up to maxB x maxT
// tokens. It must not be run concurrently.
type Program struct {
	g          *graph.Graph // the forward graph with its loss and backward
	pool       *kernels.Pool
	maxB, maxT int
	nf         int // code[:nf] is the forward (up to the loss), code[nf:] the backward
	code       []func()
	reads      [][]string // per instruction: the weights it reads
	writes     [][]string // per instruction: the weights whose G it adds into
	hook       func(i int, after bool)
	bufs       map[*graph.Value][]float32    // every f32 value's buffer, sized for maxB*maxT rows
	alias      map[*graph.Value]*graph.Value // a result written in its argument's buffer (plan.go)
	vreads     [][]*graph.Value              // per instruction: the values it reads
	vwrites    [][]*graph.Value              // ... and writes
	planned    int64                         // bytes of the planned value buffers
	inner      map[*graph.Value]int          // elements per row (whole value for fixed shapes)
	sym        map[*graph.Value]bool         // first dimension is the rows n (or s = n)
	ints       map[string][]int32            // the i32 inputs
	params     map[string]Param
	side       map[*graph.Node][]float32 // kept by a forward node for its backward (rstd, probabilities)
	lossNode   *graph.Node
	logits     *graph.Value
	loss       float32
	B, T, N    int
	hasTargets bool
	pending    bool
	at         map[*graph.Node]int // each node's index in g
	stage      stageState          // a pipeline stage's input, output and gradients (stage.go)
	scale      float32             // the loss gradient's scale (StageBackward)
	soft       []float32           // target distributions for the loss gradient (SetSoftTargets)
	sideAt     map[*graph.Node]int // the instruction of a node keeping a side buffer, its size,
	sideSize   map[*graph.Node]int // ... and the last instruction reading it (planned in plan.go)
	sideEnd    map[*graph.Node]int
	arena      *arena  // buffers shared with the other slots' programs (slots.go)
	shared     int64   // bytes of the arena this program uses
	tp         Comm    // the tensor-parallel group (comm.go); nil: none
	auxSum     float64 // the moe_aux nodes' unweighted losses of the last Forward (moe_aux.go)
	auxN       int
	docStarts  []int32 // packed documents: each row's document start (docmask.go); nil: none
	drop       dropoutState
}

// New builds the loss (mean cross-entropy of logits against targets) and the backward of fwd
// (a graph over the inputs tokens, pos, logit_rows, as model.BuildGraph writes it) with
// respect to every param that has a G, and compiles it. params must bind every weight of fwd
// (F32, of its shape). pool nil means kernels.Default.
func New(fwd *graph.Graph, params []Param, maxB, maxT int, pool *kernels.Pool) (*Program, error) {
	return build(fwd, params, maxB, maxT, pool, stageSpec{}, nil)
}

// build is New for the part of fwd and the transformations sp gives (stage.go), with the
// buffers not kept from the forward to the backward in ar when not nil (slots.go).
func build(fwd *graph.Graph, params []Param, maxB, maxT int, pool *kernels.Pool, sp stageSpec, ar *arena) (*Program, error) {
	if maxB <= 0 || maxT <= 0 {
		return nil, fmt.Errorf("trainexec: batch %d x %d", maxB, maxT)
	}
	if pool == nil {
		pool = kernels.Default
	}
	p := &Program{pool: pool, maxB: maxB, maxT: maxT, bufs: map[*graph.Value][]float32{}, alias: map[*graph.Value]*graph.Value{},
		inner: map[*graph.Value]int{}, sym: map[*graph.Value]bool{}, ints: map[string][]int32{},
		params: map[string]Param{}, side: map[*graph.Node][]float32{}, scale: 1, arena: ar,
		sideAt: map[*graph.Node]int{}, sideSize: map[*graph.Node]int{}, sideEnd: map[*graph.Node]int{}, tp: sp.tp}
	var wrt []*graph.Value
	for _, pr := range params {
		p.params[pr.Name] = pr
	}
	lg, err := sp.forward(fwd)
	if err != nil {
		return nil, err
	}
	for _, w := range lg.Weights {
		pr, ok := p.params[w.Name]
		if !ok {
			return nil, fmt.Errorf("trainexec: weight %s not bound", w)
		}
		n, _ := w.Type.Shape.Elems(nil)
		if pr.Q != nil {
			if err := checkQuant(w, pr); err != nil {
				return nil, err
			}
			continue
		}
		if w.Type.DType != tensor.F32 || len(pr.W) != n || (pr.G != nil && len(pr.G) != n) {
			return nil, fmt.Errorf("trainexec: weight %s %v bound to %d values (gradient %d); want f32", w, w.Type, len(pr.W), len(pr.G))
		}
		if pr.G != nil {
			wrt = append(wrt, w)
		}
	}
	g, wrt, err := sp.differentiate(lg, wrt)
	if err != nil {
		return nil, err
	}
	p.g = g
	p.logits = g.Value(OutputLogits)
	p.initStage(sp, len(wrt))
	maxN := maxB * maxT
	for _, v := range g.Inputs {
		if p.stageInput(v, sp) {
			if err := p.shape(v); err != nil {
				return nil, err
			}
			continue
		}
		if v.Type.DType != tensor.I32 || len(v.Type.Shape) != 1 {
			return nil, fmt.Errorf("trainexec: input %s must be i32[rows], is %v", v, v.Type)
		}
		switch v.Name {
		case InputTokens, InputPositions, InputLogitRows, InputTargets:
			p.ints[v.Name] = make([]int32, maxN)
		default:
			return nil, fmt.Errorf("trainexec: input %s is not one the executor feeds", v)
		}
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outs {
			if err := p.shape(o); err != nil {
				return nil, &graph.NodeError{Node: n.Name(), Op: n.Op, Err: err}
			}
		}
	}
	for _, w := range g.Weights {
		if err := p.shape(w); err != nil {
			return nil, err
		}
		if p.params[w.Name].Q == nil {
			p.bufs[w] = p.params[w.Name].W
		}
	}
	f := newFusion(p, g, wrt)
	p.at = f.index
	for i, n := range g.Nodes {
		if (n.Op == "cross_entropy" || n.Op == "cross_entropy_shard") && n.Outs[0] == lossTerm(g) {
			p.lossNode = n
		}
		if i == len(lg.Nodes) {
			p.nf = len(p.code) // the backward starts
		}
		if f.skip[n] {
			continue
		}
		fn, err := p.compile(n, f)
		if err != nil {
			return nil, &graph.NodeError{Node: n.Name(), Op: n.Op, Err: err}
		}
		if fn != nil {
			p.code = append(p.code, fn)
			r, w := touches(n, f)
			p.reads, p.writes = append(p.reads, r), append(p.writes, w)
			vr, vw := valueTouches(n, f)
			p.vreads, p.vwrites = append(p.vreads, vr), append(p.vwrites, vw)
		}
	}
	for i, d := range f.noSink {
		d, G := d, f.noSinkG[i]
		p.code = append(p.code, func() { kernels.Add(G, p.cur(d)) })
		p.reads, p.writes = append(p.reads, nil), append(p.writes, []string{f.noSinkW[i]})
		p.vreads, p.vwrites = append(p.vreads, []*graph.Value{d}), append(p.vwrites, nil)
	}
	if (p.lossNode == nil && sp.out == "") || p.nf <= 0 {
		return nil, fmt.Errorf("trainexec: no loss node")
	}
	p.plan(f)
	return p, nil
}

func loss0(g *graph.Graph) *graph.Value { return g.Outputs[0] }

// lossTerm is the cross-entropy of the loss: the loss, or the first term of the sum
// graph.WithMoEAux makes of it.
func lossTerm(g *graph.Graph) *graph.Value {
	v := loss0(g)
	for v.Def != nil && v.Def.Op == "add" {
		v = v.Def.Args[0]
	}
	return v
}

// shape records v's row layout (buffers are allocated on first use: an alias may take another
// value's).
func (p *Program) shape(v *graph.Value) error {
	inner, sym := 1, false
	for i, d := range v.Type.Shape {
		switch {
		case i == 0 && !d.Known():
			sym = true
		case !d.Known():
			return fmt.Errorf("value %s %v: only the first dimension may be symbolic", v, v.Type)
		default:
			inner *= d.N
		}
	}
	p.inner[v], p.sym[v] = inner, sym
	return nil
}

// buf is v's buffer, allocated at its full size on first use.
func (p *Program) buf(v *graph.Value) []float32 {
	if b := p.bufs[v]; b != nil {
		return b
	}
	size := p.inner[v]
	if p.sym[v] {
		size *= p.maxB * p.maxT
	}
	b := make([]float32, size)
	p.bufs[v] = b
	return b
}

// rows is the number of rows of v in the current batch (1 for a fixed shape: inner covers it).
func (p *Program) rows(v *graph.Value) int {
	if p.sym[v] {
		return p.N
	}
	return 1
}

// cur is v's buffer cut to the current batch.
func (p *Program) cur(v *graph.Value) []float32 {
	return p.buf(v)[:p.rows(v)*p.inner[v]]
}

// Graph is the graph the program runs: the forward with its loss, then the backward.
func (p *Program) Graph() *graph.Graph { return p.g }

// Forward runs tokens (B,T) (B sequences of T rows) through the graph and returns the mean
// cross-entropy against targets (B,T); with targets nil only the logits are computed and it
// returns 0. Ids must be in the vocabulary (the caller validates).
func (p *Program) Forward(tokens, targets []int32, B, T int) float32 {
	if B < 1 || B > p.maxB || T < 1 || T > p.maxT {
		panic(fmt.Sprintf("trainexec: batch %d x %d outside 1..%d x 1..%d", B, T, p.maxB, p.maxT))
	}
	p.B, p.T, p.N = B, T, B*T
	if tokens != nil {
		copy(p.ints[InputTokens], tokens[:p.N])
	}
	pos, rows := p.ints[InputPositions], p.ints[InputLogitRows]
	for i := 0; i < p.N; i++ {
		pos[i] = int32(i % T)
		if rows != nil {
			rows[i] = int32(i)
		}
	}
	p.hasTargets = targets != nil
	p.loss, p.auxSum, p.auxN = 0, 0, 0
	if p.hasTargets && p.ints[InputTargets] != nil {
		copy(p.ints[InputTargets], targets[:p.N])
	}
	p.run(0, p.nf)
	p.pending = p.hasTargets
	return p.loss
}

// Backward adds d(mean loss)/d(param) of the last Forward into every param's G. It runs once
// per Forward with targets; otherwise it panics.
func (p *Program) Backward() {
	if !p.pending {
		panic("trainexec: Backward needs a Forward with targets (and runs once per Forward)")
	}
	p.pending = false
	p.run(p.nf, len(p.code))
}

// Logits returns the (B*T, Vocab) logits of the last Forward.
func (p *Program) Logits() []float32 {
	if p.logits == nil {
		return nil
	}
	return p.cur(p.logits)
}

// run runs instructions [lo, hi), calling the hook around each when set.
func (p *Program) run(lo, hi int) {
	if p.hook == nil {
		for _, fn := range p.code[lo:hi] {
			fn()
		}
		return
	}
	for i := lo; i < hi; i++ {
		p.hook(i, false)
		p.code[i]()
		p.hook(i, true)
	}
}

// Instructions returns the number of instructions of the forward (they are [0, forward)) and
// of the whole program (the backward's are [forward, total)).
func (p *Program) Instructions() (forward, total int) { return p.nf, len(p.code) }

// Touches returns the weights instruction i reads and those whose gradient buffer it adds into.
func (p *Program) Touches(i int) (reads, writes []string) { return p.reads[i], p.writes[i] }

// SetHook makes Forward and Backward call hook(i, false) before instruction i and
// hook(i, true) after it (nil: none). Training uses it to fetch weights and hand on finished
// gradients (ZeRO, data-parallel buckets).
func (p *Program) SetHook(hook func(i int, after bool)) { p.hook = hook }

// touches lists the weights n's instruction reads and the gradients it writes.
func touches(n *graph.Node, f *fusion) (reads, writes []string) {
	nodes := append([]*graph.Node{n}, f.dxSum[n]...)
	seen := map[string]bool{}
	for _, m := range nodes {
		for _, a := range m.Args {
			if a.Def != nil && a.Def.Op == "tp_copy" && a.Def.Args[0].Kind == graph.KindWeight {
				a = a.Def.Args[0] // a replicated weight passed to a rank's heads
			}
			if a.Kind == graph.KindWeight && !seen[a.Name] {
				seen[a.Name] = true
				reads = append(reads, a.Name)
			}
		}
	}
	for _, o := range n.Outs {
		if w := f.sinkOf[o]; w != "" {
			writes = append(writes, w)
		}
	}
	return reads, writes
}

// ActivationBytes is the memory of the planned value buffers and of what forward nodes keep
// for their backward (weights and gradients excluded).
func (p *Program) ActivationBytes() int64 {
	n := p.planned
	for nd, b := range p.side {
		if _, planned := p.sideSize[nd]; !planned {
			n += int64(len(b)) * 4
		}
	}
	return n
}
