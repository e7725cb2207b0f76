// This file writes a graph in Graphviz's DOT language (plain text; `dot -Tsvg` draws it). Each
// node is a box naming its op, its results with their types, its attributes and the weights it
// reads (weights are lines of the label, not boxes of their own, so a 12-layer model stays
// readable); inputs are ellipses and outputs are octagons. An edge from a node with several
// results is labelled with the result it carries. Boxes are coloured by kind of op.
package graph

import (
	"fmt"
	"io"
	"strings"
)

// dotColor is a box's fill by op.
func dotColor(op string) string {
	switch op {
	case "matmul", "matmul_multi":
		return "#cfe2f3"
	case "attention":
		return "#f9cb9c"
	case "rms_norm":
		return "#d9ead3"
	case "embedding", "gather_rows":
		return "#eeeeee"
	}
	if Op(op) != nil && strings.HasPrefix(Op(op).Doc, "fused") {
		return "#fff2cc"
	}
	return "#ffffff"
}

// dotQuote is s as a DOT string.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ").Replace(s) + `"`
}

// dotLabel is s as a DOT label of left-justified lines.
func dotLabel(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\l`).Replace(s) + `\l"`
}

// WriteDOT writes g as a DOT digraph.
func WriteDOT(w io.Writer, g *Graph) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(g.Name))
	b.WriteString("  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8, color=\"#666666\"];\n")
	id := map[*Value]string{}
	for i, v := range g.Inputs {
		id[v] = fmt.Sprintf("in%d", i)
		fmt.Fprintf(&b, "  in%d [shape=ellipse, label=%s];\n", i, dotLabel(fmt.Sprintf("%s\n%v", v, v.Type)))
	}
	for i, n := range g.Nodes {
		var label strings.Builder
		label.WriteString(n.Op)
		for _, o := range n.Outs {
			fmt.Fprintf(&label, "\n%s: %v", o, o.Type)
			id[o] = fmt.Sprintf("n%d", i)
		}
		if len(n.Attrs) > 0 {
			label.WriteString("\n{")
			for j, k := range n.Attrs.keys() {
				if j > 0 {
					label.WriteString(", ")
				}
				fmt.Fprintf(&label, "%s=%v", k, n.Attrs[k])
			}
			label.WriteString("}")
		}
		for _, a := range n.Args {
			if a.Kind == KindWeight {
				fmt.Fprintf(&label, "\nw %s: %v", a.Name, a.Type)
			}
		}
		fmt.Fprintf(&b, "  n%d [shape=box, style=filled, fillcolor=%q, label=%s];\n", i, dotColor(n.Op), dotLabel(label.String()))
	}
	edge := func(v *Value, to string) {
		from, ok := id[v]
		if !ok {
			return
		}
		if v.Def != nil && len(v.Def.Outs) > 1 {
			fmt.Fprintf(&b, "  %s -> %s [label=%s];\n", from, to, dotQuote(v.String()))
		} else {
			fmt.Fprintf(&b, "  %s -> %s;\n", from, to)
		}
	}
	for i, n := range g.Nodes {
		seen := map[*Value]bool{}
		for _, a := range n.Args {
			if !seen[a] {
				seen[a] = true
				edge(a, fmt.Sprintf("n%d", i))
			}
		}
	}
	for i, v := range g.Outputs {
		fmt.Fprintf(&b, "  out%d [shape=octagon, label=%s];\n", i, dotLabel("output "+v.String()))
		edge(v, fmt.Sprintf("out%d", i))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}
