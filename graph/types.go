// Package graph is llmcloud's model IR: a model is a Graph of Nodes (ops) over typed Values,
// written once per architecture by a builder (package model) and run by serving and training
// alike. This file holds the types: a Value's Type is an element type (tensor.DType) and a Shape
// whose dimensions are sizes or symbols ("n", the rows of a batch, known only when it runs).
//
// The text form (text.go, parse.go) round-trips: Parse(Print(g)) prints the same text. Verify
// (verify.go) checks a graph and names the node at fault. Ops and their type rules are in
// ops.go; Builder (builder.go) is how code writes graphs.
package graph

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/tensor"
)

// Dim is one dimension: a size (Sym == "") or a symbol bound when the graph runs.
type Dim struct {
	N   int
	Sym string
}

// Sym is a symbolic dimension, e.g. Sym("n") for the rows of a batch.
func Sym(s string) Dim { return Dim{Sym: s} }

// D is a fixed dimension.
func D(n int) Dim { return Dim{N: n} }

// Known reports whether d is a fixed size.
func (d Dim) Known() bool { return d.Sym == "" }

func (d Dim) String() string {
	if d.Sym != "" {
		return d.Sym
	}
	return strconv.Itoa(d.N)
}

// Shape is row-major, outermost dimension first (tensor's convention: a linear weight is
// [out, in]).
type Shape []Dim

// Dims is a shape of fixed sizes.
func Dims(ns ...int) Shape {
	s := make(Shape, len(ns))
	for i, n := range ns {
		s[i] = D(n)
	}
	return s
}

// Equal reports whether two shapes are the same dimension by dimension.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Last is the innermost dimension (the zero Dim for a scalar).
func (s Shape) Last() Dim {
	if len(s) == 0 {
		return Dim{}
	}
	return s[len(s)-1]
}

// Elems is the number of elements with each symbol bound by env; ok is false when a symbol
// is unbound.
func (s Shape) Elems(env map[string]int) (n int, ok bool) {
	n = 1
	for _, d := range s {
		if d.Sym != "" {
			v, bound := env[d.Sym]
			if !bound {
				return 0, false
			}
			n *= v
		} else {
			n *= d.N
		}
	}
	return n, true
}

func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Type is a value's element type and shape.
type Type struct {
	DType tensor.DType
	Shape Shape
}

// T is a Type of fixed or symbolic dimensions.
func T(dt tensor.DType, dims ...Dim) Type { return Type{DType: dt, Shape: Shape(dims)} }

// Equal reports whether two types are the same.
func (t Type) Equal(o Type) bool { return t.DType == o.DType && t.Shape.Equal(o.Shape) }

// String is the text form: lower-case dtype then shape, e.g. "q8_0[288,288]", "f32[n,288]".
func (t Type) String() string { return strings.ToLower(t.DType.String()) + t.Shape.String() }

// Bytes is the storage of a value of type t with the symbols bound by env (quantized types by
// whole blocks along the last dimension); ok is false when a symbol is unbound or the last
// dimension is not a whole number of blocks.
func (t Type) Bytes(env map[string]int) (int64, bool) {
	n, ok := t.Shape.Elems(env)
	if !ok {
		return 0, false
	}
	be := t.DType.BlockElems()
	if be <= 0 || n%be != 0 {
		return 0, false
	}
	return int64(n/be) * int64(t.DType.BlockBytes()), true
}

// parseType reads a Type's text form ("f32[n,288]", "i32[n]", "f32[]").
func parseType(s string) (Type, error) {
	open := strings.IndexByte(s, '[')
	if open <= 0 || !strings.HasSuffix(s, "]") {
		return Type{}, fmt.Errorf("type %q: want dtype[dims]", s)
	}
	dt, err := tensor.Parse(s[:open])
	if err != nil {
		return Type{}, fmt.Errorf("type %q: %w", s, err)
	}
	inner := s[open+1 : len(s)-1]
	var shape Shape
	if inner != "" {
		for _, p := range strings.Split(inner, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				return Type{}, fmt.Errorf("type %q: empty dimension", s)
			}
			if c := p[0]; c >= '0' && c <= '9' {
				n, err := strconv.Atoi(p)
				if err != nil || n < 0 || n > 1<<40 {
					return Type{}, fmt.Errorf("type %q: dimension %q", s, p)
				}
				shape = append(shape, D(n))
				continue
			}
			if !isIdent(p) {
				return Type{}, fmt.Errorf("type %q: dimension %q is neither a size nor a symbol", s, p)
			}
			shape = append(shape, Sym(p))
		}
	}
	return Type{DType: dt, Shape: shape}, nil
}

// isIdent reports whether s is a name: letters, digits, '_' and '.', not starting with a digit
// or '.'.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9') || c == '.':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}
