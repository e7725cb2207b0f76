// Tests of the converter: exported models decoded back and checked for structure (types of
// the input and output, every node input defined before use, standard ops only, transposed
// weights, per-head norms, rope tables with Llama 3 factors, GQA), and errors naming the
// node. ONNX Runtime itself runs the exports in scripts/onnx (docs/onnx.md).
package onnxexport

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/format/onnx"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

var baseCfg = model.Config{Arch: "qwen3", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 96,
	Vocab: 50, CtxLen: 40, RopeTheta: 1e6, NormEps: 1e-6, RopeNeoX: true, QKNorm: true}

// fakeWeights gives every tensor of cfg deterministic values: element i of tensor t is
// sin(len(t's name) + 0.1*i).
func fakeWeights(cfg *model.Config) Weights {
	shapes := cfg.Shapes()
	return func(name string) ([]float32, []int, error) {
		if name == model.RopeFreqsName {
			f, err := kernels.Llama3Factors(cfg.HeadDim, cfg.RopeTheta, *cfg.RopeScaling)
			return f, []int{len(f)}, err
		}
		shape := shapes[name]
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Sin(float64(len(name)) + 0.1*float64(i)))
		}
		return v, shape, nil
	}
}

// export builds cfg's graph, exports it and decodes the bytes back.
func export(t *testing.T, cfg *model.Config) *onnx.Model {
	t.Helper()
	return exportOpts(t, cfg, Options{MaxPositions: cfg.CtxLen, Producer: "test"})
}

func exportOpts(t *testing.T, cfg *model.Config, opt Options) *onnx.Model {
	t.Helper()
	g, err := model.BuildGraph(cfg, nil, cfg.RopeScaling != nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Export(g, fakeWeights(cfg), opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := onnx.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

var standardOps = []string{"Add", "Div", "Expand", "Gather", "Greater", "LessOrEqual", "MatMul", "Mul", "Or",
	"Range", "ReduceMean", "Reshape", "Shape", "Sigmoid", "Softmax", "Sqrt", "Sub", "Tanh", "Transpose",
	"Unsqueeze", "Where", "Identity", "Concat"}

// checkStructure checks what every export must satisfy.
func checkStructure(t *testing.T, m *onnx.Model, vocab int64) {
	t.Helper()
	if m.IRVersion != IRVersion || len(m.Opsets) != 1 || m.Opsets[0] != (onnx.OpsetID{Version: Opset}) {
		t.Errorf("ir %d opsets %v", m.IRVersion, m.Opsets)
	}
	in, out := m.Graph.Inputs, m.Graph.Outputs
	if len(in) < 1 || in[0].Name != "input_ids" || in[0].ElemType != onnx.Int64 ||
		!slices.Equal(in[0].Shape, []onnx.Dim{{Param: "batch"}, {Param: "seq"}}) {
		t.Errorf("inputs %+v", in)
	}
	if len(out) != len(in) || out[0].Name != "logits" || out[0].ElemType != onnx.Float ||
		!slices.Equal(out[0].Shape, []onnx.Dim{{Param: "batch"}, {Param: "seq"}, {Value: vocab}}) {
		t.Errorf("outputs %+v", out)
	}
	defined := map[string]bool{}
	for _, v := range in {
		defined[v.Name] = true
	}
	for _, tn := range m.Graph.Initializers {
		if defined[tn.Name] {
			t.Errorf("initializer %s twice", tn.Name)
		}
		defined[tn.Name] = true
		if n := tn.DataType.Size(); n == 0 || int64(len(tn.Raw)) != int64(n)*product(tn.Dims) {
			t.Errorf("initializer %s: %d bytes for dims %v of type %d", tn.Name, len(tn.Raw), tn.Dims, tn.DataType)
		}
	}
	for _, n := range m.Graph.Nodes {
		if !slices.Contains(standardOps, n.OpType) || n.Domain != "" {
			t.Errorf("node %s: op %s (domain %q) is not among the expected standard ops", n.Name, n.OpType, n.Domain)
		}
		for _, a := range n.Inputs {
			if !defined[a] {
				t.Errorf("node %s (%s) reads %q before it is defined", n.Name, n.OpType, a)
			}
		}
		for _, o := range n.Outputs {
			if defined[o] {
				t.Errorf("node %s redefines %s", n.Name, o)
			}
			defined[o] = true
		}
	}
	for _, v := range out {
		if !defined[v.Name] {
			t.Errorf("no node computes output %s", v.Name)
		}
	}
}

func product(dims []int64) int64 {
	p := int64(1)
	for _, d := range dims {
		p *= d
	}
	return p
}

func initializer(m *onnx.Model, name string) *onnx.Tensor {
	for _, tn := range m.Graph.Initializers {
		if tn.Name == name {
			return tn
		}
	}
	return nil
}

func TestExportQwen3(t *testing.T) {
	cfg := baseCfg
	m := export(t, &cfg)
	checkStructure(t, m, int64(cfg.Vocab))
	// matmul weights are stored transposed: [in, out]
	wq, _, _ := fakeWeights(&cfg)("blk.0.attn_q.weight") // [QDim=128, Dim=64]
	tq := initializer(m, "blk.0.attn_q.weight.T")
	if tq == nil || !slices.Equal(tq.Dims, []int64{64, 128}) {
		t.Fatalf("attn_q transposed: %+v", tq)
	}
	if f := tq.Floats(); f[5*128+7] != wq[7*64+5] {
		t.Errorf("transposed [5,7] = %v, want w[7,5] = %v", f[5*128+7], wq[7*64+5])
	}
	// per-head q/k norms reshape rows into heads of 32
	if initializer(m, "const/i64_0_0_-1_32") == nil {
		t.Error("no per-head reshape [0,0,-1,32] for the q/k norms")
	}
	// neox rope: each index swaps with the one half a head away
	perm := initializer(m, "const/i64_16_17_18_19_20_21_22_23_24_25_26_27_28_29_30_31_0_1_2_3_4_5_6_7_8_9_10_11_12_13_14_15")
	if perm == nil {
		t.Error("no rotate-half permutation")
	}
	// 2 query heads per KV head: k and v repeated by Expand, twice per layer
	counts := map[string]int{}
	for _, n := range m.Graph.Nodes {
		counts[n.OpType]++
	}
	if counts["Expand"] != 2*cfg.Layers || counts["Softmax"] != cfg.Layers || counts["Range"] != 1 {
		t.Errorf("op counts %v", counts)
	}
	// the untied output projection is the last MatMul, writing logits through no gather
	last := m.Graph.Nodes[len(m.Graph.Nodes)-1]
	if last.OpType != "MatMul" || last.Outputs[0] != "logits" || last.Inputs[1] != "output.weight.T" {
		t.Errorf("last node %+v", last)
	}
}

// TestExportLlama3: pairwise rope with Llama 3 frequency factors folded into the tables, a
// tied output (the embedding stored plain for Gather and transposed for the MatMul).
func TestExportLlama3(t *testing.T) {
	cfg := baseCfg
	cfg.Arch, cfg.QKNorm, cfg.RopeNeoX, cfg.Tied, cfg.HeadDim, cfg.RopeTheta = "llama", false, false, true, 16, 10000
	cfg.RopeScaling = &model.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 16}
	m := export(t, &cfg)
	checkStructure(t, m, int64(cfg.Vocab))
	if initializer(m, "token_embd.weight") == nil || initializer(m, "token_embd.weight.T") == nil {
		t.Error("tied embedding not stored both ways")
	}
	if initializer(m, model.RopeFreqsName) != nil {
		t.Error("rope_freqs stored: it belongs in the tables")
	}
	perm := initializer(m, "const/i64_1_0_3_2_5_4_7_6_9_8_11_10_13_12_15_14")
	if perm == nil {
		t.Fatal("no adjacent-pair permutation")
	}
	var cos, sin *onnx.Tensor
	for _, tn := range m.Graph.Initializers {
		if strings.HasSuffix(tn.Name, "/cos") {
			cos = tn
		} else if strings.HasSuffix(tn.Name, "/sin") {
			sin = tn
		}
	}
	if cos == nil || sin == nil || !slices.Equal(cos.Dims, []int64{40, 1, 16}) {
		t.Fatalf("rope tables %+v %+v", cos, sin)
	}
	factors, _ := kernels.Llama3Factors(16, 10000, *cfg.RopeScaling)
	if factors[7] == 1 {
		t.Fatal("test needs a scaled frequency")
	}
	c, s := cos.Floats(), sin.Floats()
	for _, pos := range []int{1, 13, 39} {
		for _, i := range []int{0, 3, 7} {
			angle := float64(pos) * math.Pow(10000, -2*float64(i)/16) / float64(factors[i])
			row := pos * 16
			if math.Abs(float64(c[row+2*i])-math.Cos(angle)) > 1e-4 || c[row+2*i] != c[row+2*i+1] ||
				math.Abs(float64(s[row+2*i+1])-math.Sin(angle)) > 1e-4 || s[row+2*i] != -s[row+2*i+1] {
				t.Errorf("pos %d pair %d: cos %v,%v sin %v,%v, want cos %v sin %v", pos, i,
					c[row+2*i], c[row+2*i+1], s[row+2*i], s[row+2*i+1], math.Cos(angle), math.Sin(angle))
			}
		}
	}
}

// TestExportKVCache: past inputs and present outputs per layer, in Hugging Face's layout; the
// present cache is the past with this call's keys appended (Concat on the sequence axis).
func TestExportKVCache(t *testing.T) {
	cfg := baseCfg
	m := exportOpts(t, &cfg, Options{MaxPositions: cfg.CtxLen, KVCache: true})
	checkStructure(t, m, int64(cfg.Vocab))
	in, out := m.Graph.Inputs, m.Graph.Outputs
	if len(in) != 1+2*cfg.Layers {
		t.Fatalf("%d inputs", len(in))
	}
	past := []onnx.Dim{{Param: "batch"}, {Value: 2}, {Param: "past_seq"}, {Value: 32}}
	if in[3].Name != "past_key_values.1.key" || !slices.Equal(in[3].Shape, past) || in[3].ElemType != onnx.Float {
		t.Errorf("input 3: %+v", in[3])
	}
	if out[4].Name != "present.1.value" || out[4].Shape[2] != (onnx.Dim{Param: "total_seq"}) {
		t.Errorf("output 4: %+v", out[4])
	}
	concats := 0
	for _, n := range m.Graph.Nodes {
		if n.OpType == "Concat" {
			concats++
			if !strings.HasPrefix(n.Inputs[0], "past_key_values.") || n.Outputs[0] != strings.Replace(n.Inputs[0], "past_key_values.", "present.", 1) {
				t.Errorf("concat %v -> %v", n.Inputs, n.Outputs)
			}
		}
		if n.OpType == "Range" && n.Outputs[0] == "positions" && n.Inputs[0] != "positions/past_seq" {
			t.Errorf("positions start at %s, want past_seq", n.Inputs[0])
		}
	}
	if concats != 2*cfg.Layers {
		t.Errorf("%d Concat nodes", concats)
	}
}

// TestExportErrors: ops and inputs the export cannot map fail naming the node.
func TestExportErrors(t *testing.T) {
	b := graph.NewBuilder("ce")
	ids := b.Input("tokens", graph.T(tensor.I32, graph.Sym("n")))
	targets := b.Input("targets", graph.T(tensor.I32, graph.Sym("n")))
	x := b.Op("embedding", nil, b.Weight("emb", graph.T(tensor.F32, graph.D(10), graph.D(4))), ids)
	b.Output(b.NamedOp("loss", "cross_entropy", nil, x, targets))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	w := func(string) ([]float32, []int, error) { return make([]float32, 40), []int{10, 4}, nil }
	_, err = Export(g, w, Options{MaxPositions: 8})
	if err == nil || !strings.Contains(err.Error(), "%loss") || !strings.Contains(err.Error(), "cross_entropy") {
		t.Errorf("cross_entropy: %v", err)
	}
	b = graph.NewBuilder("other-input")
	b.Input("tokens", graph.T(tensor.I32, graph.Sym("n")))
	other := b.Input("other", graph.T(tensor.I32, graph.Sym("n")))
	b.Output(b.NamedOp("y", "embedding", nil, b.Weight("emb", graph.T(tensor.F32, graph.D(10), graph.D(4))), other))
	if g, err = b.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err = Export(g, w, Options{MaxPositions: 8}); err == nil || !strings.Contains(err.Error(), "%y") || !strings.Contains(err.Error(), "%other") {
		t.Errorf("embedding of another input: %v", err)
	}
	if _, err := Export(g, w, Options{}); err == nil || !strings.Contains(err.Error(), "MaxPositions") {
		t.Errorf("no positions: %v", err)
	}

	cfg := baseCfg
	g2, err := model.BuildGraph(&cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	short := func(name string) ([]float32, []int, error) { return []float32{1}, []int{1}, nil }
	if _, err := Export(g2, short, Options{MaxPositions: 8}); err == nil || !strings.Contains(err.Error(), "token_embd.weight") {
		t.Errorf("weight of the wrong size: %v", err)
	}
	// an op without a mapping
	g2.Nodes[len(g2.Nodes)-1].Op = "softcap_unknown"
	if _, err := Export(g2, fakeWeights(&cfg), Options{MaxPositions: 8}); err == nil || !strings.Contains(err.Error(), "%logits") {
		t.Errorf("unknown op: %v", err)
	}
}
