// This file holds the optional KV cache of an export (Options.KVCache), in the layout
// Hugging Face's ONNX exports use: per attention layer L an input past_key_values.L.key and
// .value, float32 [batch, kv_heads, past_seq, head_dim] (keys after RoPE; past_seq may be 0),
// and outputs present.L.key and .value [batch, kv_heads, past_seq + seq, head_dim], the past
// with this call's keys and values appended. The call's tokens are at positions
// past_seq..past_seq+seq-1 and attend to every cached position before them.
package onnxexport

import (
	"fmt"

	"github.com/llmcloud/llmcloud/format/onnx"
	"github.com/llmcloud/llmcloud/graph"
)

// Names of the cache's inputs and outputs.
func pastName(layer int64, kv string) string    { return fmt.Sprintf("past_key_values.%d.%s", layer, kv) }
func presentName(layer int64, kv string) string { return fmt.Sprintf("present.%d.%s", layer, kv) }

// declareCache adds the past inputs and present outputs of every attention node's layer, in
// the graph's order, and remembers the first past key (whose length is past_seq).
func (e *exporter) declareCache() error {
	seen := map[int64]bool{}
	for _, n := range e.g.Nodes {
		if n.Op != "attention" {
			continue
		}
		layer := n.Attrs.Int("layer", 0)
		if seen[layer] {
			return fmt.Errorf("onnxexport: node %s: a second attention of layer %d: the KV cache needs one per layer", n.Name(), layer)
		}
		seen[layer] = true
		kvh, hd := n.Attrs.Int("kv_heads", 0), n.Attrs.Int("head_dim", 0)
		for _, kv := range []string{"key", "value"} {
			e.kvIn = append(e.kvIn, onnx.ValueInfo{Name: pastName(layer, kv), ElemType: onnx.Float,
				Shape: []onnx.Dim{{Param: "batch"}, {Value: kvh}, {Param: "past_seq"}, {Value: hd}}})
			e.kvOut = append(e.kvOut, onnx.ValueInfo{Name: presentName(layer, kv), ElemType: onnx.Float,
				Shape: []onnx.Dim{{Param: "batch"}, {Value: kvh}, {Param: "total_seq"}, {Value: hd}}})
		}
	}
	if len(e.kvIn) == 0 {
		return fmt.Errorf("onnxexport: KV cache: the graph has no attention")
	}
	return nil
}

// cachePositions sets e.pos to past_seq..past_seq+seq-1 and e.keyPos to 0..past_seq+seq-1.
func (e *exporter) cachePositions(seq string) {
	shape := e.add("Shape", []string{e.kvIn[0].Name}, []string{"positions/past_shape"})[0]
	past := e.add("Gather", []string{shape, e.ints(true, 2)}, []string{"positions/past_seq"}, onnx.IntAttr("axis", 0))[0]
	total := e.add("Add", []string{past, seq}, []string{"positions/total_seq"})[0]
	e.pos = e.add("Range", []string{past, total, e.ints(true, 1)}, []string{"positions"})[0]
	e.keyPos = e.add("Range", []string{e.ints(true, 0), total, e.ints(true, 1)}, []string{"key_positions"})[0]
}

// cachedKV appends this call's k and v (f32 [B, S, kv_heads*hd]) to the layer's past and
// returns kᵀ [B, KV, hd, T] and v [B, KV, T, hd] over all T = past_seq + seq positions.
func (e *exporter) cachedKV(n *graph.Node, k, v string) (kt, vv string) {
	layer, kvh, hd := n.Attrs.Int("layer", 0), n.Attrs.Int("kv_heads", 0), n.Attrs.Int("head_dim", 0)
	heads := func(x string) string { // [B, KV, S, hd]
		return e.op1("Transpose", []string{e.op1("Reshape", []string{x, e.ints(false, 0, 0, kvh, hd)})},
			onnx.IntsAttr("perm", 0, 2, 1, 3))
	}
	pk := e.add("Concat", []string{pastName(layer, "key"), heads(k)}, []string{presentName(layer, "key")}, onnx.IntAttr("axis", 2))[0]
	pv := e.add("Concat", []string{pastName(layer, "value"), heads(v)}, []string{presentName(layer, "value")}, onnx.IntAttr("axis", 2))[0]
	return e.op1("Transpose", []string{pk}, onnx.IntsAttr("perm", 0, 1, 3, 2)), pv
}
