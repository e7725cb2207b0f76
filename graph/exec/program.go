// Package exec is the serving executor: Compile binds a model graph (after the serving passes
// of package graph) to its weights once and plans its activation buffers; Program.Run runs it
// over a ragged batch of rows from many sequences with the paged KV cache.
//
// This file holds Compile: weights checked against the graph's declared types and bound (1-d
// weights decoded to f32 once), one instruction per node chosen once, and every f32 value
// given a buffer slot by liveness (a value whose last use is an element-wise op may be
// overwritten in place by that op's result).
package exec

import (
	"fmt"
	"slices"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// The graph inputs the executor feeds (see Step).
const (
	InputTokens    = "tokens"     // i32[n]: Step.Tokens
	InputPositions = "pos"        // i32[n]: Step.Rows[i].Pos
	InputLogitRows = "logit_rows" // i32[s]: Step.LogitRows
)

// Options are Compile's choices.
type Options struct {
	Pool *kernels.Pool // nil: kernels.Default
	// Invariant makes every row's result independent of the rest of the batch (matmuls through
	// kernels.MatMulInvariant for a lone row).
	Invariant bool
	// TP is the tensor-parallel group of a graph sharded by graph.ShardTPServing (nil: none).
	TP Collective
	// Hidden names an f32[rows, width] input fed from Step.Hidden: a later pipeline stage's
	// graph (graph.Cut) reads the residual stream the stage before computed ("": none).
	Hidden string
}

// value is the executor's record of one graph value.
type value struct {
	v      *graph.Value
	sym    string // the symbol of the first dimension ("" : fixed rows)
	rows   int    // the first dimension when fixed
	inner  int    // elements per row
	last   int    // the last dimension (1 for a scalar)
	slot   int    // buffer slot (f32 results), -1 otherwise
	data   []float32
	ints   []int          // i32 inputs
	weight *tensor.Tensor // weights
	vec    []float32      // 1-d weights, decoded
}

// slot is one activation buffer, shared by values whose lifetimes do not overlap.
type slot struct {
	sym   string
	inner int
	buf   []float32
}

// instr is one node's compiled form.
type instr interface {
	run(p *Program) error
}

// Program is a compiled graph. It must not be run concurrently.
type Program struct {
	g          *graph.Graph
	pool       *kernels.Pool
	invariant  bool
	vals       []*value
	ids        map[*graph.Value]int
	slots      []slot
	code       []instr
	nodes      []*graph.Node // code[i] is nodes[i]
	byNode     map[*graph.Node]instr
	ropes      []*ropeTable
	out        int // the output value
	inputs     map[string]int
	inputOrder []int // the inputs' value ids
	lastRows   []int // their lengths in the previous run
	viewsOK    bool  // values point into slots sized for lastRows
	outBuf     []float32
	env        map[string]int
	posBuf     []int
	step       *Step
	runs       uint64          // Run calls so far (rope tables are filled once per run)
	prof       *programProfile // nil: profiling off (profile.go)
	observe    MatMulObserver  // nil: no matmul observer (observe.go)
	tp         Collective      // the tensor-parallel group (tp.go), nil without one
	hidden     int             // the Options.Hidden input's value id, -1: none
}

// Compile binds g to weights (by the graph's weight names) and prepares it to run.
func Compile(g *graph.Graph, weights map[string]*tensor.Tensor, opts Options) (*Program, error) {
	if err := graph.Verify(g); err != nil {
		return nil, err
	}
	if len(g.Outputs) != 1 {
		return nil, fmt.Errorf("exec: the serving executor runs graphs of one output, %s has %d", g.Name, len(g.Outputs))
	}
	p := &Program{g: g, pool: opts.Pool, invariant: opts.Invariant, tp: opts.TP, hidden: -1, ids: map[*graph.Value]int{},
		inputs: map[string]int{}, env: map[string]int{}, byNode: map[*graph.Node]instr{}}
	if p.pool == nil {
		p.pool = kernels.Default
	}
	add := func(v *graph.Value) (*value, error) {
		x := &value{v: v, slot: -1, inner: 1, last: 1}
		if len(v.Type.Shape) > 0 {
			x.last = v.Type.Shape.Last().N
		}
		for i, d := range v.Type.Shape {
			switch {
			case i == 0 && !d.Known():
				x.sym = d.Sym
			case i == 0:
				x.rows = d.N
			case !d.Known():
				return nil, fmt.Errorf("exec: value %s %v: only the first dimension may be symbolic", v, v.Type)
			default:
				x.inner *= d.N
			}
		}
		if len(v.Type.Shape) == 0 {
			x.rows = 1
		}
		p.ids[v] = len(p.vals)
		p.vals = append(p.vals, x)
		return x, nil
	}
	for _, v := range g.Inputs {
		if opts.Hidden != "" && v.Name == opts.Hidden {
			if v.Type.DType != tensor.F32 || len(v.Type.Shape) != 2 || v.Type.Shape[0].Known() {
				return nil, fmt.Errorf("exec: hidden input %s must be f32[symbol, width], is %v", v, v.Type)
			}
			x, err := add(v)
			if err != nil {
				return nil, err
			}
			p.hidden = p.ids[x.v]
			continue
		}
		switch v.Name {
		case InputTokens, InputPositions, InputLogitRows:
		default:
			return nil, fmt.Errorf("exec: input %s is not one the serving executor feeds (%s, %s, %s)", v, InputTokens, InputPositions, InputLogitRows)
		}
		if v.Type.DType != tensor.I32 || len(v.Type.Shape) != 1 || v.Type.Shape[0].Known() {
			return nil, fmt.Errorf("exec: input %s must be i32[symbol], is %v", v, v.Type)
		}
		if _, err := add(v); err != nil {
			return nil, err
		}
		p.inputs[v.Name] = p.ids[v]
		p.inputOrder = append(p.inputOrder, p.ids[v])
		p.lastRows = append(p.lastRows, -1)
	}
	for _, v := range g.Weights {
		x, err := add(v)
		if err != nil {
			return nil, err
		}
		if err := bindWeight(x, weights[v.Name]); err != nil {
			return nil, err
		}
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outs {
			if _, err := add(o); err != nil {
				return nil, err
			}
		}
	}
	p.out = p.ids[g.Outputs[0]]
	if p.vals[p.out].v.Kind != graph.KindResult || p.vals[p.out].v.Type.DType != tensor.F32 {
		return nil, fmt.Errorf("exec: output %s must be an f32 result", g.Outputs[0])
	}
	for _, n := range g.Nodes {
		in, err := p.compileNode(n)
		if err != nil {
			return nil, &graph.NodeError{Node: n.Name(), Op: n.Op, Err: err}
		}
		p.code = append(p.code, in)
		p.byNode[n] = in
		p.nodes = append(p.nodes, n)
	}
	p.plan()
	return p, nil
}

// bindWeight checks t against x's declared type and binds it.
func bindWeight(x *value, t *tensor.Tensor) error {
	v := x.v
	if t == nil {
		return fmt.Errorf("exec: weight %s missing", v)
	}
	want := make([]int, len(v.Type.Shape))
	for i, d := range v.Type.Shape {
		if !d.Known() {
			return fmt.Errorf("exec: weight %s has a symbolic shape %v", v, v.Type)
		}
		want[i] = d.N
	}
	if t.Type != v.Type.DType || !slices.Equal(t.Shape, want) {
		return fmt.Errorf("exec: weight %s is %s%v, the graph declares %v", v, t.Type, t.Shape, v.Type)
	}
	if err := t.Check(); err != nil {
		return fmt.Errorf("exec: weight %s: %w", v, err)
	}
	if len(want) == 2 {
		if _, err := t.Type.RowBytes(want[1]); err != nil {
			return fmt.Errorf("exec: weight %s: %w", v, err)
		}
	}
	x.weight = t
	switch {
	case len(want) == 1:
		f, err := t.Float32()
		if err != nil {
			return fmt.Errorf("exec: weight %s: %w", v, err)
		}
		x.vec = f
	case t.Type == tensor.F32:
		x.vec = kernels.F32View(t.Data) // an f32 matrix read as an operand: viewed, not copied
	}
	return nil
}

// inPlace lists, per result of op, the argument whose buffer the result may take over when
// that argument dies at this node (-1: none).
func inPlace(op string) []int {
	switch op {
	case "add", "mul", "silu", "scale", "softcap", "softmax", "swiglu", "rope", "rms_norm", "gelu", "geglu", "swiglu_oai", "all_reduce_sum":
		return []int{0}
	case "add_rms_norm":
		return []int{0, -1}
	case "qkv_rope":
		return []int{0, 1, 2}
	}
	return nil
}

// plan gives every f32 result a slot: slots of a value dead after node i are reused by later
// values of the same row symbol and row width. The output keeps a slot of its own.
func (p *Program) plan() {
	last := map[int]int{}
	for i, n := range p.nodes {
		for _, a := range n.Args {
			last[p.ids[a]] = i
		}
	}
	free := map[[2]any][]int{}
	key := func(x *value) [2]any { return [2]any{x.sym, x.inner * max(x.rows, 1)} }
	newSlot := func(x *value) int {
		k := key(x)
		if s := free[k]; len(s) > 0 {
			free[k] = s[:len(s)-1]
			return s[len(s)-1]
		}
		p.slots = append(p.slots, slot{sym: x.sym, inner: x.inner * max(x.rows, 1)})
		return len(p.slots) - 1
	}
	for i, n := range p.nodes {
		taken := map[int]bool{}
		ip := inPlace(n.Op)
		for j, o := range n.Outs {
			x := p.vals[p.ids[o]]
			if p.ids[o] == p.out {
				p.slots = append(p.slots, slot{sym: x.sym, inner: x.inner * max(x.rows, 1)})
				x.slot = len(p.slots) - 1
				continue
			}
			if j < len(ip) && ip[j] >= 0 && ip[j] < len(n.Args) {
				a := p.vals[p.ids[n.Args[ip[j]]]]
				if a.slot >= 0 && last[p.ids[a.v]] == i && !taken[a.slot] && key(a) == key(x) && argOnce(n, a.v) {
					x.slot = a.slot
					taken[a.slot] = true
					continue
				}
			}
			x.slot = newSlot(x)
		}
		seen := map[int]bool{}
		for _, a := range n.Args {
			x := p.vals[p.ids[a]]
			if x.slot < 0 || seen[x.slot] || last[p.ids[a]] != i || taken[x.slot] || p.ids[a] == p.out {
				continue
			}
			seen[x.slot] = true
			free[key(x)] = append(free[key(x)], x.slot)
		}
		for _, o := range n.Outs {
			x := p.vals[p.ids[o]]
			if _, used := last[p.ids[o]]; !used && p.ids[o] != p.out && !seen[x.slot] {
				seen[x.slot] = true
				free[key(x)] = append(free[key(x)], x.slot)
			}
		}
	}
}

// argOnce reports whether v is an argument of n exactly once (an op reading a value twice
// cannot overwrite it in place).
func argOnce(n *graph.Node, v *graph.Value) bool {
	c := 0
	for _, a := range n.Args {
		if a == v {
			c++
		}
	}
	return c == 1
}

// Graph is the graph p runs.
func (p *Program) Graph() *graph.Graph { return p.g }

// Slots is the number of activation buffers p uses.
func (p *Program) Slots() int { return len(p.slots) }

// SetPool changes the pool the kernels run on (nil: kernels.Default).
func (p *Program) SetPool(pool *kernels.Pool) {
	if pool == nil {
		pool = kernels.Default
	}
	p.pool = pool
}

// SetInvariant changes Options.Invariant.
func (p *Program) SetInvariant(on bool) { p.invariant = on }
