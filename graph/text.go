// This file prints a graph in its text form, one declaration or node per line:
//
//	graph llama {
//	  input %tokens: i32[n]
//	  weight %token_embd.weight: q8_0[32000,288]
//	  %x: f32[n,288] = embedding(%token_embd.weight, %tokens)
//	  %s: f32[n,288], %h: f32[n,288] = add_rms_norm(%x, %y, %w) {eps=1e-05}
//	  output %logits
//	}
//
// '#' starts a comment. Parse (parse.go) reads it back.
package graph

import (
	"fmt"
	"io"
	"strings"
)

// Print writes g's text form to w.
func Print(w io.Writer, g *Graph) error {
	_, err := io.WriteString(w, String(g))
	return err
}

// String is g's text form.
func String(g *Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph %s {\n", g.Name)
	for _, v := range g.Inputs {
		fmt.Fprintf(&b, "  input %s: %v\n", v, v.Type)
	}
	for _, v := range g.Weights {
		fmt.Fprintf(&b, "  weight %s: %v\n", v, v.Type)
	}
	for _, n := range g.Nodes {
		b.WriteString("  ")
		writeNode(&b, n)
		b.WriteByte('\n')
	}
	b.WriteString("  output ")
	for i, v := range g.Outputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.String())
	}
	b.WriteString("\n}\n")
	return b.String()
}

func writeNode(b *strings.Builder, n *Node) {
	for i, o := range n.Outs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%s: %v", o, o.Type)
	}
	fmt.Fprintf(b, " = %s(", n.Op)
	for i, a := range n.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteByte(')')
	if len(n.Attrs) > 0 {
		b.WriteString(" {")
		for i, k := range n.Attrs.keys() {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%s=%v", k, n.Attrs[k])
		}
		b.WriteByte('}')
	}
}

// NodeString is one node's line of the text form.
func NodeString(n *Node) string {
	var b strings.Builder
	writeNode(&b, n)
	return b.String()
}
