// This file checks a graph: names unique and well formed, every argument defined before its
// use, ops known with the right arity and attributes, and every result's declared type equal
// to what the op's type rule gives. Errors name the node (by its first result) and the op.
package graph

import (
	"errors"
	"fmt"
)

// NodeError is an error about one node.
type NodeError struct {
	Node string // the node's first result, e.g. "%t3"
	Op   string
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph: node %s (%s): %v", e.Node, e.Op, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// Verify checks g (see the file comment).
func Verify(g *Graph) error {
	if g == nil {
		return errors.New("graph: nil graph")
	}
	defined := map[*Value]bool{}
	names := map[string]bool{}
	declare := func(v *Value, kind Kind) error {
		switch {
		case v == nil:
			return errors.New("nil value")
		case !isIdent(v.Name):
			return fmt.Errorf("value name %q: want letters, digits, '_' or '.', not starting with a digit or '.'", v.Name)
		case names[v.Name]:
			return fmt.Errorf("value %%%s defined twice", v.Name)
		case v.Kind != kind:
			return fmt.Errorf("value %%%s: kind %d, want %d", v.Name, v.Kind, kind)
		case !v.Type.DType.Valid():
			return fmt.Errorf("value %%%s: invalid dtype", v.Name)
		}
		for _, d := range v.Type.Shape {
			if d.Sym != "" && !isIdent(d.Sym) || d.Sym == "" && d.N < 0 {
				return fmt.Errorf("value %%%s: bad dimension %q", v.Name, d)
			}
		}
		names[v.Name] = true
		defined[v] = true
		return nil
	}
	for _, v := range g.Inputs {
		if err := declare(v, KindInput); err != nil {
			return fmt.Errorf("graph: input: %w", err)
		}
	}
	for _, v := range g.Weights {
		if err := declare(v, KindWeight); err != nil {
			return fmt.Errorf("graph: weight: %w", err)
		}
	}
	for i, n := range g.Nodes {
		if n == nil {
			return fmt.Errorf("graph: node %d is nil", i)
		}
		fail := func(format string, args ...any) error {
			return &NodeError{Node: n.Name(), Op: n.Op, Err: fmt.Errorf(format, args...)}
		}
		for j, a := range n.Args {
			if a == nil || !defined[a] {
				name := "nil"
				if a != nil {
					name = a.String()
				}
				return fail("argument %d (%s) is not defined before this node", j, name)
			}
		}
		types, err := Infer(n.Op, argTypes(n.Args), n.Attrs)
		if err != nil {
			var ne *NodeError
			if errors.As(err, &ne) {
				ne.Node = n.Name()
				return ne
			}
			return fail("%v", err)
		}
		if len(n.Outs) != len(types) {
			return fail("%d results, the op gives %d", len(n.Outs), len(types))
		}
		for j, o := range n.Outs {
			if err := declare(o, KindResult); err != nil {
				return fail("result %d: %v", j, err)
			}
			if o.Def != n || o.Index != j {
				return fail("result %s does not point back at this node", o)
			}
			if !o.Type.Equal(types[j]) {
				return fail("result %s declared %v, the op gives %v", o, o.Type, types[j])
			}
		}
	}
	if len(g.Outputs) == 0 {
		return errors.New("graph: no outputs")
	}
	for _, o := range g.Outputs {
		if o == nil || !defined[o] {
			return fmt.Errorf("graph: output %v is not defined", o)
		}
	}
	return nil
}

// Infer checks an op application and returns its result types; errors name the op but no node.
func Infer(op string, args []Type, attrs Attrs) ([]Type, error) {
	d := ops[op]
	fail := func(format string, a ...any) error {
		return &NodeError{Node: "?", Op: op, Err: fmt.Errorf(format, a...)}
	}
	if d == nil {
		return nil, fail("unknown op")
	}
	if len(args) < d.MinArgs || (d.MaxArgs >= 0 && len(args) > d.MaxArgs) {
		if d.MaxArgs == d.MinArgs {
			return nil, fail("%d arguments, want %d", len(args), d.MinArgs)
		}
		return nil, fail("%d arguments, want %d to %d", len(args), d.MinArgs, d.MaxArgs)
	}
	for _, s := range d.Attrs {
		v, ok := attrs[s.Name]
		if !ok {
			if s.Required {
				return nil, fail("missing attribute %s", s.Name)
			}
			continue
		}
		if v.Kind != s.Kind && !(s.Kind == AttrFloat && v.Kind == AttrInt) {
			return nil, fail("attribute %s is %s, want %s", s.Name, v.Kind, s.Kind)
		}
	}
	for _, k := range attrs.keys() {
		known := false
		for _, s := range d.Attrs {
			known = known || s.Name == k
		}
		if !known {
			return nil, fail("unknown attribute %s", k)
		}
	}
	for i, a := range args {
		if !a.DType.Valid() {
			return nil, fail("argument %d has an invalid dtype", i)
		}
	}
	types, err := d.Infer(args, attrs)
	if err != nil {
		return nil, fail("%v", err)
	}
	return types, nil
}

func argTypes(vs []*Value) []Type {
	ts := make([]Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type
	}
	return ts
}
