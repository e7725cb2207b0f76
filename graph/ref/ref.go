// Package ref is a plain-Go reference interpreter of the graph IR: every op of graph's registry
// (forward, fused and backward) computed in float64, as simply as possible, so that it is
// obviously correct. It is the yardstick for executors and the instrument of the gradient
// checks (finite differences need float64). Performance is not a goal.
//
// Values: f32 values are held as float64, i32 values as int32, and weights of any dtype are
// given dequantized (FromTensor uses tensor's Float32). Every result is checked against its
// declared type, with the graph's symbols ("n", "s") bound by the first value that uses them.
//
// The sequence layout of attention (and attention_grad): the rows of the batch are sequences
// laid end to end, as training's B×T batch is. A row whose position (the graph input "pos")
// is 0 starts a new sequence; every other row continues the previous row's sequence. A graph
// without a "pos" input is one sequence. Attention is causal within a sequence, never across.
package ref

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// PosInput is the graph input whose zeros start the sequences of attention.
const PosInput = "pos"

// Tensor is a value: F for f32 (and dequantized weights), I for i32.
type Tensor struct {
	Shape []int
	F     []float64
	I     []int32
}

// F64 is an f32 value held in float64.
func F64(shape []int, data []float64) *Tensor { return &Tensor{Shape: shape, F: data} }

// FromF32 is an f32 value.
func FromF32(shape []int, data []float32) *Tensor {
	f := make([]float64, len(data))
	for i, v := range data {
		f[i] = float64(v)
	}
	return &Tensor{Shape: append([]int(nil), shape...), F: f}
}

// Ints is an i32 value.
func Ints(shape []int, data []int32) *Tensor { return &Tensor{Shape: shape, I: data} }

// FromTensor dequantizes a weight of any dtype.
func FromTensor(t *tensor.Tensor) (*Tensor, error) {
	v, err := t.Float32()
	if err != nil {
		return nil, fmt.Errorf("ref: %s: %w", t.Name, err)
	}
	return FromF32(t.Shape, v), nil
}

// Float32 returns the values rounded to float32.
func (t *Tensor) Float32() []float32 {
	out := make([]float32, len(t.F))
	for i, v := range t.F {
		out[i] = float32(v)
	}
	return out
}

// Len is the number of elements of the shape.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Last is the innermost dimension (1 for a scalar).
func (t *Tensor) Last() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

func zerosF(shape []int) *Tensor {
	t := &Tensor{Shape: append([]int(nil), shape...)}
	t.F = make([]float64, t.Len())
	return t
}

// ctx is what an op sees beyond its arguments: the sequence each row belongs to.
type ctx struct {
	seqStart []int // seqStart[r]: the first row of row r's sequence (nil: one sequence)
}

// start returns the first row of row r's sequence.
func (c *ctx) start(r int) int {
	if c.seqStart == nil {
		return 0
	}
	return c.seqStart[r]
}

// opFunc computes a node's results from its arguments.
type opFunc func(c *ctx, args []*Tensor, a graph.Attrs) ([]*Tensor, error)

var opFuncs = map[string]opFunc{}

// Has reports whether ref implements op.
func Has(op string) bool { return opFuncs[op] != nil }

// Run evaluates g with vals giving every input and weight by name, and returns its outputs.
func Run(g *graph.Graph, vals map[string]*Tensor) ([]*Tensor, error) {
	all, err := RunAll(g, vals)
	if err != nil {
		return nil, err
	}
	out := make([]*Tensor, len(g.Outputs))
	for i, o := range g.Outputs {
		out[i] = all[o]
	}
	return out, nil
}

// RunAll is Run returning every value of the graph.
func RunAll(g *graph.Graph, vals map[string]*Tensor) (map[*graph.Value]*Tensor, error) {
	env := map[string]int{}
	have := map[*graph.Value]*Tensor{}
	for _, vs := range [][]*graph.Value{g.Inputs, g.Weights} {
		for _, v := range vs {
			t := vals[v.Name]
			if t == nil {
				return nil, fmt.Errorf("ref: no value for %v", v)
			}
			if err := check(v, t, env); err != nil {
				return nil, err
			}
			have[v] = t
		}
	}
	c := &ctx{}
	if p := g.Value(PosInput); p != nil && p.Kind == graph.KindInput {
		pos := have[p].I
		c.seqStart = make([]int, len(pos))
		for r := range pos {
			if r > 0 && pos[r] != 0 {
				c.seqStart[r] = c.seqStart[r-1]
			} else {
				c.seqStart[r] = r
			}
		}
	}
	for _, n := range g.Nodes {
		f := opFuncs[n.Op]
		if f == nil {
			return nil, fmt.Errorf("ref: node %s: op %s not implemented", n.Name(), n.Op)
		}
		args := make([]*Tensor, len(n.Args))
		for i, a := range n.Args {
			args[i] = have[a]
		}
		outs, err := f(c, args, n.Attrs)
		if err != nil {
			return nil, fmt.Errorf("ref: node %s (%s): %w", n.Name(), n.Op, err)
		}
		if len(outs) != len(n.Outs) {
			return nil, fmt.Errorf("ref: node %s (%s): %d results, want %d", n.Name(), n.Op, len(outs), len(n.Outs))
		}
		for i, o := range n.Outs {
			if err := check(o, outs[i], env); err != nil {
				return nil, fmt.Errorf("ref: node %s (%s): %w", n.Name(), n.Op, err)
			}
			have[o] = outs[i]
		}
	}
	return have, nil
}

// check compares t with v's declared type, binding symbols in env.
func check(v *graph.Value, t *Tensor, env map[string]int) error {
	if len(t.Shape) != len(v.Type.Shape) {
		return fmt.Errorf("%v: shape %v, declared %v", v, t.Shape, v.Type)
	}
	for i, d := range v.Type.Shape {
		want := d.N
		if d.Sym != "" {
			if b, ok := env[d.Sym]; ok {
				want = b
			} else {
				env[d.Sym], want = t.Shape[i], t.Shape[i]
			}
		}
		if t.Shape[i] != want {
			return fmt.Errorf("%v: shape %v, declared %v (%s = %d)", v, t.Shape, v.Type, d, want)
		}
	}
	n := t.Len()
	if v.Type.DType == tensor.I32 {
		if len(t.I) != n {
			return fmt.Errorf("%v: %d ints for shape %v", v, len(t.I), t.Shape)
		}
	} else if len(t.F) != n {
		return fmt.Errorf("%v: %d floats for shape %v", v, len(t.F), t.Shape)
	}
	return nil
}
