// This file is Builder, how code writes a graph: declare inputs and weights, apply ops (each
// result's type comes from the op's type rule), name the outputs, Finish. The first error is
// kept and returned by Finish, so a builder reads as straight-line code without an error check
// per op; later ops after an error produce placeholders.
package graph

import (
	"fmt"
	"strconv"
)

// Builder writes one Graph.
type Builder struct {
	g     Graph
	names map[string]bool
	seq   int
	err   error
}

// NewBuilder starts a graph called name.
func NewBuilder(name string) *Builder {
	return &Builder{g: Graph{Name: name}, names: map[string]bool{}}
}

func (b *Builder) setErr(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Err is the first error so far.
func (b *Builder) Err() error { return b.err }

func (b *Builder) claim(name string) string {
	if name == "" {
		for {
			name = "t" + strconv.Itoa(b.seq)
			b.seq++
			if !b.names[name] {
				break
			}
		}
	}
	if !isIdent(name) {
		b.setErr(fmt.Errorf("graph: bad value name %q", name))
	} else if b.names[name] {
		b.setErr(fmt.Errorf("graph: value %%%s defined twice", name))
	}
	b.names[name] = true
	return name
}

// Input declares a graph input.
func (b *Builder) Input(name string, t Type) *Value {
	v := &Value{Name: b.claim(name), Type: t, Kind: KindInput}
	b.g.Inputs = append(b.g.Inputs, v)
	return v
}

// Weight declares a named weight tensor.
func (b *Builder) Weight(name string, t Type) *Value {
	v := &Value{Name: b.claim(name), Type: t, Kind: KindWeight}
	b.g.Weights = append(b.g.Weights, v)
	return v
}

// Op applies a single-result op and returns its result (automatically named).
func (b *Builder) Op(op string, attrs Attrs, args ...*Value) *Value {
	return b.NamedOp("", op, attrs, args...)
}

// NamedOp is Op with the result called name.
func (b *Builder) NamedOp(name, op string, attrs Attrs, args ...*Value) *Value {
	outs := b.apply(op, attrs, args, []string{name})
	return outs[0]
}

// OpN applies an op with several results, named by names (empty: automatic; fewer names than
// results: the rest automatic).
func (b *Builder) OpN(op string, attrs Attrs, args []*Value, names ...string) []*Value {
	return b.apply(op, attrs, args, names)
}

func (b *Builder) apply(op string, attrs Attrs, args []*Value, names []string) []*Value {
	types, err := Infer(op, argTypes(nonNil(args)), attrs)
	if err == nil && len(nonNil(args)) != len(args) {
		err = fmt.Errorf("graph: %s: nil argument", op)
	}
	if err != nil {
		if ne, ok := err.(*NodeError); ok && len(names) > 0 && names[0] != "" {
			ne.Node = "%" + names[0]
		}
		b.setErr(err)
		types = make([]Type, max(len(names), 1))
	}
	n := &Node{Op: op, Args: args, Attrs: attrs}
	for i, t := range types {
		name := ""
		if i < len(names) {
			name = names[i]
		}
		n.Outs = append(n.Outs, &Value{Name: b.claim(name), Type: t, Kind: KindResult, Def: n, Index: i})
	}
	if err == nil {
		b.g.Nodes = append(b.g.Nodes, n)
	}
	return n.Outs
}

func nonNil(vs []*Value) []*Value {
	out := vs[:0:0]
	for _, v := range vs {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// Output marks values as the graph's outputs, in order.
func (b *Builder) Output(vs ...*Value) { b.g.Outputs = append(b.g.Outputs, vs...) }

// Finish returns the graph, verified, or the first error.
func (b *Builder) Finish() (*Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	g := b.g
	if err := Verify(&g); err != nil {
		return nil, err
	}
	return &g, nil
}
