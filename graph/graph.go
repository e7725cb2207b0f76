// This file holds the graph itself: Values (graph inputs, weights, node results), Nodes (one
// op applied to values, with attributes, giving one or more results) and the Graph that lists
// them in an order where every value is defined before it is used.
package graph

import (
	"fmt"
	"sort"
	"strconv"
)

// Kind says where a Value comes from.
type Kind int

const (
	KindInput  Kind = iota // fed by the caller at run time (token ids, positions, targets)
	KindWeight             // a named tensor of the model file
	KindResult             // computed by a node
)

// Value is one tensor of the graph. Its Name is unique in the graph.
type Value struct {
	Name  string
	Type  Type
	Kind  Kind
	Def   *Node // the node computing it (KindResult)
	Index int   // which of Def's results
}

func (v *Value) String() string { return "%" + v.Name }

// Node applies Op to Args, producing Outs.
type Node struct {
	Op    string
	Args  []*Value
	Attrs Attrs
	Outs  []*Value
}

// Name is the node's name in messages: its first result's.
func (n *Node) Name() string {
	if len(n.Outs) == 0 {
		return "(" + n.Op + ")"
	}
	return n.Outs[0].String()
}

// Graph is a whole computation.
type Graph struct {
	Name    string
	Inputs  []*Value // KindInput, in calling order
	Weights []*Value // KindWeight
	Nodes   []*Node  // each after the nodes its arguments come from
	Outputs []*Value
}

// Value returns the value called name, or nil.
func (g *Graph) Value(name string) *Value {
	for _, v := range g.Inputs {
		if v.Name == name {
			return v
		}
	}
	for _, v := range g.Weights {
		if v.Name == name {
			return v
		}
	}
	for _, n := range g.Nodes {
		for _, v := range n.Outs {
			if v.Name == name {
				return v
			}
		}
	}
	return nil
}

// OpCounts counts nodes by op.
func (g *Graph) OpCounts() map[string]int {
	m := map[string]int{}
	for _, n := range g.Nodes {
		m[n.Op]++
	}
	return m
}

// Users maps each value to the nodes that read it (a node reading a value twice is listed
// twice) and each graph output to nothing: use IsOutput for those.
func (g *Graph) Users() map[*Value][]*Node {
	u := map[*Value][]*Node{}
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			u[a] = append(u[a], n)
		}
	}
	return u
}

// IsOutput reports whether v is one of g's outputs.
func (g *Graph) IsOutput(v *Value) bool {
	for _, o := range g.Outputs {
		if o == v {
			return true
		}
	}
	return false
}

// Attr is one attribute value: exactly one of its fields is meaningful, by Kind.
type Attr struct {
	Kind AttrKind
	I    int64
	F    float64
	S    string
	Ints []int64
}

// AttrKind is an attribute's type.
type AttrKind int

const (
	AttrInt AttrKind = iota
	AttrFloat
	AttrString
	AttrInts
)

func (k AttrKind) String() string {
	return [...]string{"int", "float", "string", "ints"}[k]
}

// Attrs are a node's attributes by name.
type Attrs map[string]Attr

// Int, Float, Str and IntList make attributes.
func Int(v int64) Attr        { return Attr{Kind: AttrInt, I: v} }
func Float(v float64) Attr    { return Attr{Kind: AttrFloat, F: v} }
func Str(v string) Attr       { return Attr{Kind: AttrString, S: v} }
func IntList(v ...int64) Attr { return Attr{Kind: AttrInts, Ints: v} }

// Int returns attribute name as an int (def when absent).
func (a Attrs) Int(name string, def int64) int64 {
	if v, ok := a[name]; ok && v.Kind == AttrInt {
		return v.I
	}
	return def
}

// Float returns attribute name as a float (an int attribute converts; def when absent).
func (a Attrs) Float(name string, def float64) float64 {
	if v, ok := a[name]; ok {
		switch v.Kind {
		case AttrFloat:
			return v.F
		case AttrInt:
			return float64(v.I)
		}
	}
	return def
}

// Str returns attribute name as a string (def when absent).
func (a Attrs) Str(name, def string) string {
	if v, ok := a[name]; ok && v.Kind == AttrString {
		return v.S
	}
	return def
}

// Ints returns attribute name as a list (nil when absent).
func (a Attrs) Ints(name string) []int64 {
	if v, ok := a[name]; ok && v.Kind == AttrInts {
		return v.Ints
	}
	return nil
}

// keys returns the attribute names sorted.
func (a Attrs) keys() []string {
	ks := make([]string, 0, len(a))
	for k := range a {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (v Attr) String() string {
	switch v.Kind {
	case AttrInt:
		return strconv.FormatInt(v.I, 10)
	case AttrFloat:
		s := strconv.FormatFloat(v.F, 'g', -1, 64)
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			s += ".0" // keep it a float when read back
		}
		return s
	case AttrString:
		return strconv.Quote(v.S)
	case AttrInts:
		s := "["
		for i, x := range v.Ints {
			if i > 0 {
				s += ","
			}
			s += strconv.FormatInt(x, 10)
		}
		return s + "]"
	}
	return fmt.Sprintf("?%d", v.Kind)
}
