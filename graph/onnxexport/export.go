// Package onnxexport converts a model graph (package graph, as model.BuildGraph writes it) into
// a standard ONNX model (package format/onnx): float32 weights as initializers, opset 17,
// input `input_ids` int64 [batch, seq] and output `logits` float32 [batch, seq, vocab] for
// every position, positions 0..seq-1 with causal attention over the sequence; optionally a KV
// cache in Hugging Face's layout (Options.KVCache).
//
// This file holds the exporter's state and helpers (names, constants, weights); ops.go maps
// each graph op to ONNX ops; attention.go holds rope and attention; kvcache.go the cache;
// model.go exports a loaded model.Model.
package onnxexport

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/format/onnx"
	"github.com/llmcloud/llmcloud/graph"
)

// Names of the exported model's input and output and the graph inputs the exporter knows.
const (
	InputIDs     = "input_ids"
	OutputLogits = "logits"

	graphTokens    = "tokens"     // fed by input_ids
	graphPositions = "pos"        // computed: 0..seq-1
	graphLogitRows = "logit_rows" // all rows: gather_rows over it is the identity
)

// Opset is the ONNX operator set the export targets; IRVersion the matching IR version.
const (
	Opset     = 17
	IRVersion = 8
)

// Weights returns a weight's values as float32 (dequantized), row-major, and its shape.
type Weights func(name string) ([]float32, []int, error)

// Options tune an export.
type Options struct {
	// MaxPositions is the number of positions the rotary tables cover (the longest sequence
	// the exported model accepts); required.
	MaxPositions int
	// Producer and ProducerVersion go into the model's header.
	Producer, ProducerVersion string
	// DocString describes the model.
	DocString string
	// KVCache adds past_key_values.L.key/value inputs and present.L.key/value outputs per
	// layer (kvcache.go), for decoding a token at a time.
	KVCache bool
}

// exporter builds one ONNX graph.
type exporter struct {
	g      *graph.Graph
	w      Weights
	opt    Options
	nodes  []onnx.Node
	inits  []*onnx.Tensor
	have   map[string]bool         // initializer names
	names  map[*graph.Value]string // ONNX name of each graph value
	consts map[string]string       // constant key -> initializer name
	seq    int                     // for fresh names
	pos    string                  // positions of this call's tokens, int64 [seq] ("" until needed)
	keyPos string                  // positions of the keys attended to (= pos without a KV cache)
	kvIn   []onnx.ValueInfo        // KV cache inputs (Options.KVCache)
	kvOut  []onnx.ValueInfo        // KV cache outputs
	masks  map[int64]string        // causal mask by window (0: none): bool [seq, seq], true = hidden
	ropes  map[string][2]string    // rope tables by key: cos, sin
	cur    string                  // the graph node being converted (for fresh names)
}

// Export converts g, reading its weights through w.
func Export(g *graph.Graph, w Weights, opt Options) (*onnx.Model, error) {
	if opt.MaxPositions <= 0 {
		return nil, fmt.Errorf("onnxexport: MaxPositions must be positive, is %d", opt.MaxPositions)
	}
	if err := graph.Verify(g); err != nil {
		return nil, fmt.Errorf("onnxexport: %w", err)
	}
	e := &exporter{g: g, w: w, opt: opt, have: map[string]bool{}, names: map[*graph.Value]string{},
		consts: map[string]string{}, masks: map[int64]string{}, ropes: map[string][2]string{}}
	vocab := int64(-1)
	for _, in := range g.Inputs {
		if in.Name == graphTokens {
			e.names[in] = InputIDs
		}
		// pos is computed (positions), logit_rows implied (gather_rows); a node reading any
		// other input fails, naming itself.
	}
	if opt.KVCache {
		if err := e.declareCache(); err != nil {
			return nil, err
		}
	}
	if len(g.Outputs) != 1 {
		return nil, fmt.Errorf("onnxexport: graph has %d outputs, want 1 (the logits)", len(g.Outputs))
	}
	if t := g.Outputs[0].Type; len(t.Shape) == 2 && t.Shape[1].Known() {
		vocab = int64(t.Shape[1].N)
	}
	for _, n := range g.Nodes {
		e.cur = n.Outs[0].Name
		if err := e.node(n); err != nil {
			return nil, fmt.Errorf("onnxexport: node %s (%s): %w", n.Name(), n.Op, err)
		}
	}
	out := e.names[g.Outputs[0]]
	if out != OutputLogits {
		e.add("Identity", []string{out}, []string{OutputLogits})
	}
	m := &onnx.Model{
		IRVersion: IRVersion, Opsets: []onnx.OpsetID{{Version: Opset}},
		ProducerName: opt.Producer, ProducerVersion: opt.ProducerVersion, DocString: opt.DocString,
		Graph: onnx.Graph{
			Name:         g.Name,
			Nodes:        e.nodes,
			Initializers: e.inits,
			Inputs: append([]onnx.ValueInfo{{Name: InputIDs, ElemType: onnx.Int64,
				Shape: []onnx.Dim{{Param: "batch"}, {Param: "seq"}}}}, e.kvIn...),
			Outputs: append([]onnx.ValueInfo{{Name: OutputLogits, ElemType: onnx.Float,
				Shape: []onnx.Dim{{Param: "batch"}, {Param: "seq"}, {Value: vocab}}}}, e.kvOut...),
		},
		Metadata: map[string]string{"max_positions": strconv.Itoa(opt.MaxPositions)},
	}
	if vocab < 0 {
		m.Graph.Outputs[0].Shape[2] = onnx.Dim{Param: "vocab"}
	}
	return m, nil
}

// fresh is a new value name derived from the current node's.
func (e *exporter) fresh(what string) string {
	e.seq++
	return fmt.Sprintf("%s/%s_%d", e.cur, what, e.seq)
}

// add appends a node and returns its outputs.
func (e *exporter) add(op string, in, out []string, attrs ...onnx.Attribute) []string {
	e.nodes = append(e.nodes, onnx.Node{Name: e.fresh(op), OpType: op, Inputs: in, Outputs: out, Attrs: attrs})
	return out
}

// op1 appends a single-output node with a fresh output name.
func (e *exporter) op1(op string, in []string, attrs ...onnx.Attribute) string {
	return e.add(op, in, []string{e.fresh(strings.ToLower(op))}, attrs...)[0]
}

// result names a graph result after the graph's value (so the ONNX graph reads like the IR).
func (e *exporter) result(v *graph.Value, op string, in []string, attrs ...onnx.Attribute) {
	e.names[v] = e.add(op, in, []string{v.Name}, attrs...)[0]
}

func (e *exporter) init(t *onnx.Tensor) string {
	if !e.have[t.Name] {
		e.have[t.Name] = true
		e.inits = append(e.inits, t)
	}
	return t.Name
}

// ints is an int64 constant [len(v)] (a scalar when scalar is set).
func (e *exporter) ints(scalar bool, v ...int64) string {
	key := fmt.Sprintf("i64%v%v", scalar, v)
	if n, ok := e.consts[key]; ok {
		return n
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	name := "const/i64_" + strings.Join(parts, "_")
	dims := []int64{int64(len(v))}
	if scalar {
		name, dims = "const/i64s_"+parts[0], nil
	}
	e.consts[key] = e.init(onnx.Int64Tensor(name, dims, v))
	return e.consts[key]
}

// float is a float32 scalar constant.
func (e *exporter) float(f float32) string {
	key := fmt.Sprintf("f32_%08x", math.Float32bits(f))
	if n, ok := e.consts[key]; ok {
		return n
	}
	e.consts[key] = e.init(onnx.FloatTensor("const/"+key, nil, []float32{f}))
	return e.consts[key]
}

// value is the ONNX name of a graph value; weights are stored as they are.
func (e *exporter) value(v *graph.Value) (string, error) {
	if v.Kind == graph.KindWeight {
		return e.weight(v, false)
	}
	n, ok := e.names[v]
	if !ok {
		return "", fmt.Errorf("argument %%%s has no ONNX value (the export feeds only %%%s, and %%%s, %%%s where rope and gather_rows read them)",
			v.Name, graphTokens, graphPositions, graphLogitRows)
	}
	return n, nil
}

// weight stores weight v as a float32 initializer, transposed ([K,N] from [N,K]) for MatMul
// when transposed is set.
func (e *exporter) weight(v *graph.Value, transposed bool) (string, error) {
	if v.Kind != graph.KindWeight {
		return "", fmt.Errorf("%%%s must be a weight", v.Name)
	}
	name := v.Name
	if transposed {
		name += ".T"
	}
	if e.have[name] {
		return name, nil
	}
	data, shape, err := e.w(v.Name)
	if err != nil {
		return "", fmt.Errorf("weight %s: %w", v.Name, err)
	}
	if n, ok := v.Type.Shape.Elems(nil); !ok || n != len(data) {
		return "", fmt.Errorf("weight %s: %d values for type %v", v.Name, len(data), v.Type)
	}
	dims := make([]int64, len(shape))
	for i, d := range shape {
		dims[i] = int64(d)
	}
	if transposed {
		if len(shape) != 2 {
			return "", fmt.Errorf("weight %s: shape %v, want 2-d to transpose", v.Name, shape)
		}
		rows, cols := shape[0], shape[1]
		t := make([]float32, len(data))
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				t[c*rows+r] = data[r*cols+c]
			}
		}
		data, dims = t, []int64{int64(cols), int64(rows)}
	}
	return e.init(onnx.FloatTensor(name, dims, data)), nil
}
