// This file maps each graph op to ONNX ops (opset 17). Activations are [batch, seq, ..]
// where the graph has [n, ..]: every op here works on the last dimension, so the mapping is
// op by op. Ops the export does not know fail with an error naming the node.
package onnxexport

import (
	"fmt"

	"github.com/llmcloud/llmcloud/format/onnx"
	"github.com/llmcloud/llmcloud/graph"
)

// node converts one graph node.
func (e *exporter) node(n *graph.Node) error {
	switch n.Op {
	case "embedding":
		return e.embedding(n)
	case "matmul", "matmul_multi":
		x, err := e.value(n.Args[0])
		if err != nil {
			return err
		}
		for i, w := range n.Args[1:] {
			wt, err := e.weight(w, true)
			if err != nil {
				return err
			}
			e.result(n.Outs[i], "MatMul", []string{x, wt})
		}
		return nil
	case "rms_norm":
		x, err := e.value(n.Args[0])
		if err != nil {
			return err
		}
		return e.rmsNorm(n.Outs[0], x, n.Args[0], n.Args[1], n.Attrs.Float("eps", 0))
	case "add_rms_norm":
		args, err := e.values(n.Args[:2])
		if err != nil {
			return err
		}
		e.result(n.Outs[0], "Add", args)
		return e.rmsNorm(n.Outs[1], e.names[n.Outs[0]], n.Args[0], n.Args[2], n.Attrs.Float("eps", 0))
	case "add", "mul":
		args, err := e.values(n.Args)
		if err != nil {
			return err
		}
		e.result(n.Outs[0], map[string]string{"add": "Add", "mul": "Mul"}[n.Op], args)
		return nil
	case "silu", "swiglu":
		args, err := e.values(n.Args)
		if err != nil {
			return err
		}
		sig := e.op1("Sigmoid", args[:1])
		if n.Op == "silu" {
			e.result(n.Outs[0], "Mul", []string{args[0], sig})
			return nil
		}
		e.result(n.Outs[0], "Mul", []string{e.op1("Mul", []string{args[0], sig}), args[1]})
		return nil
	case "softmax":
		x, err := e.value(n.Args[0])
		if err != nil {
			return err
		}
		e.result(n.Outs[0], "Softmax", []string{x}, onnx.IntAttr("axis", -1))
		return nil
	case "scale":
		x, err := e.value(n.Args[0])
		if err != nil {
			return err
		}
		e.result(n.Outs[0], "Mul", []string{x, e.float(float32(n.Attrs.Float("by", 1)))})
		return nil
	case "softcap":
		x, err := e.value(n.Args[0])
		if err != nil {
			return err
		}
		e.names[n.Outs[0]] = e.softcap(x, float32(n.Attrs.Float("cap", 0)), n.Outs[0].Name)
		return nil
	case "gather_rows":
		if n.Args[1].Kind != graph.KindInput || n.Args[1].Name != graphLogitRows {
			return fmt.Errorf("rows %%%s: only gather_rows over the graph input %%%s (all rows) exports", n.Args[1].Name, graphLogitRows)
		}
		x, err := e.value(n.Args[0])
		if err != nil {
			return err
		}
		e.names[n.Outs[0]] = x // the export computes every position: all rows, in order
		return nil
	case "rope":
		return e.rope(n)
	case "attention":
		return e.attention(n)
	}
	return fmt.Errorf("op %s has no ONNX mapping", n.Op)
}

func (e *exporter) values(vs []*graph.Value) ([]string, error) {
	out := make([]string, len(vs))
	for i, v := range vs {
		s, err := e.value(v)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// embedding gathers rows of the table by input_ids.
func (e *exporter) embedding(n *graph.Node) error {
	if n.Args[1].Kind != graph.KindInput || n.Args[1].Name != graphTokens {
		return fmt.Errorf("ids %%%s: only an embedding of the graph input %%%s exports", n.Args[1].Name, graphTokens)
	}
	table, err := e.weight(n.Args[0], false)
	if err != nil {
		return err
	}
	e.result(n.Outs[0], "Gather", []string{table, InputIDs}, onnx.IntAttr("axis", 0))
	return nil
}

// rmsNorm writes out = x / sqrt(mean(x², by groups of len(w)) + eps) * w; groups smaller than
// the row (per-head norms) reshape the row into [.., D/G, G] first.
func (e *exporter) rmsNorm(out *graph.Value, x string, xv, w *graph.Value, eps float64) error {
	wn, err := e.weight(w, false)
	if err != nil {
		return err
	}
	d, g := int64(xv.Type.Shape.Last().N), int64(w.Type.Shape[0].N)
	in := x
	if g < d {
		in = e.op1("Reshape", []string{x, e.ints(false, 0, 0, -1, g)})
	}
	sq := e.op1("Mul", []string{in, in})
	ms := e.op1("ReduceMean", []string{sq}, onnx.IntsAttr("axes", -1), onnx.IntAttr("keepdims", 1))
	rms := e.op1("Sqrt", []string{e.op1("Add", []string{ms, e.float(float32(eps))})})
	normed := e.op1("Div", []string{in, rms})
	if g == d {
		e.result(out, "Mul", []string{normed, wn})
		return nil
	}
	scaled := e.op1("Mul", []string{normed, wn})
	e.result(out, "Reshape", []string{scaled, e.ints(false, 0, 0, d)})
	return nil
}

// softcap is cap * tanh(x / cap).
func (e *exporter) softcap(x string, c float32, name string) string {
	if c <= 0 {
		return x
	}
	t := e.op1("Tanh", []string{e.op1("Div", []string{x, e.float(c)})})
	return e.add("Mul", []string{t, e.float(c)}, []string{name})[0]
}
