// This file adds a whole new architecture, "llmcloud-demo", from this one file: a block with
// attention and feed-forward in parallel off one norm (x + attn(norm x) + mlp(norm x), as
// GPT-J and Falcon have it) and a plain (ungated) SiLU MLP, and a bias on the output
// projection. It registers the family (names, shapes, Hugging Face names, its own builder),
// writes a random-weight GGUF of it with the ordinary GGUF writer, loads it with the ordinary
// loader, runs it through the serving graph executor, and checks the logits against the
// float64 reference interpreter on the same graph; then writes the same model as a Hugging
// Face directory and loads that. docs/adding-a-family.md walks through it.
package model_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

const demoArch = "llmcloud-demo"

func init() {
	model.Register(&model.Family{
		Arch: demoArch, HFModelType: "llmcloud_demo", HFArchitecture: "LlmcloudDemoForCausalLM",
		RopeTheta: 10000, NormEps: 1e-5,
		// The block's kind, written into both formats and required when read back: a file
		// of the name without it is not this network.
		ToGGUF: func(*model.Config) []gguf.KV {
			return []gguf.KV{{Key: demoArch + ".parallel_residual", Value: gguf.Bool(true)}}
		},
		FromGGUF: func(f *gguf.File, _ *model.Config) error {
			if v, ok := f.Bool(demoArch + ".parallel_residual"); !ok || !v {
				return fmt.Errorf("%s.parallel_residual is not true", demoArch)
			}
			return nil
		},
		ToHF: func(_ *model.Config, hc *hfdir.Config) { hc.Raw["parallel_residual"] = true },
		FromHF: func(hc *hfdir.Config, _ *model.Config) error {
			if hc.Raw["parallel_residual"] != true {
				return fmt.Errorf("config.json parallel_residual is not true")
			}
			return nil
		},
		Shapes: demoShapes, Build: demoGraph,
		Names: model.NameMap{
			Global: map[string]string{
				"transformer.wte.weight":  "token_embd.weight",
				"transformer.ln_f.weight": "output_norm.weight",
				"lm_head.weight":          "output.weight",
				"lm_head.bias":            "output.bias",
			},
			BlockPrefix: "transformer.h.",
			Block: map[string]string{
				"ln.weight":         "attn_norm.weight",
				"attn.q.weight":     "attn_q.weight",
				"attn.k.weight":     "attn_k.weight",
				"attn.v.weight":     "attn_v.weight",
				"attn.out.weight":   "attn_output.weight",
				"mlp.fc_in.weight":  "ffn_up.weight",
				"mlp.fc_out.weight": "ffn_down.weight",
			},
		},
	})
}

// demoShapes lists the demo's tensors by GGUF name.
func demoShapes(c *model.Config) map[string][]int {
	s := map[string][]int{
		"token_embd.weight":  {c.Vocab, c.Dim},
		"output_norm.weight": {c.Dim},
		"output.weight":      {c.Vocab, c.Dim},
		"output.bias":        {c.Vocab},
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		s[p+"attn_norm.weight"] = []int{c.Dim}
		s[p+"attn_q.weight"] = []int{c.QDim(), c.Dim}
		s[p+"attn_k.weight"] = []int{c.KVDim(), c.Dim}
		s[p+"attn_v.weight"] = []int{c.KVDim(), c.Dim}
		s[p+"attn_output.weight"] = []int{c.Dim, c.QDim()}
		s[p+"ffn_up.weight"] = []int{c.FFN, c.Dim}
		s[p+"ffn_down.weight"] = []int{c.Dim, c.FFN}
	}
	return s
}

// demoGraph is the demo's builder: the same inputs, output and op set as the Llama family's,
// wired differently.
func demoGraph(c *model.Config, dtype func(string) tensor.DType, _ bool) (*graph.Graph, error) {
	n, s := graph.Sym("n"), graph.Sym("s")
	b := graph.NewBuilder(c.Arch)
	mat := func(name string, rows, cols int) *graph.Value {
		return b.Weight(name, graph.T(dtype(name), graph.D(rows), graph.D(cols)))
	}
	vec := func(name string, size int) *graph.Value {
		return b.Weight(name, graph.T(tensor.F32, graph.D(size)))
	}
	tokens := b.Input(model.InputTokens, graph.T(tensor.I32, n))
	pos := b.Input(model.InputPositions, graph.T(tensor.I32, n))
	rows := b.Input(model.InputLogitRows, graph.T(tensor.I32, s))
	eps := graph.Attrs{"eps": graph.Float(float64(c.NormEps))}
	rope := func(x *graph.Value, heads int) *graph.Value {
		return b.Op("rope", graph.Attrs{"heads": graph.Int(int64(heads)), "head_dim": graph.Int(int64(c.HeadDim)),
			"theta": graph.Float(c.RopeTheta)}, x, pos)
	}
	x := b.Op("embedding", nil, mat("token_embd.weight", c.Vocab, c.Dim), tokens)
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		h := b.Op("rms_norm", eps, x, vec(p+"attn_norm.weight", c.Dim))
		q := rope(b.Op("matmul", nil, h, mat(p+"attn_q.weight", c.QDim(), c.Dim)), c.Heads)
		k := rope(b.Op("matmul", nil, h, mat(p+"attn_k.weight", c.KVDim(), c.Dim)), c.KVHeads)
		v := b.Op("matmul", nil, h, mat(p+"attn_v.weight", c.KVDim(), c.Dim))
		att := b.Op("attention", graph.Attrs{"layer": graph.Int(int64(l)), "heads": graph.Int(int64(c.Heads)),
			"kv_heads": graph.Int(int64(c.KVHeads)), "head_dim": graph.Int(int64(c.HeadDim))}, q, k, v)
		o := b.Op("matmul", nil, att, mat(p+"attn_output.weight", c.Dim, c.QDim()))
		u := b.Op("silu", nil, b.Op("matmul", nil, h, mat(p+"ffn_up.weight", c.FFN, c.Dim)))
		d := b.Op("matmul", nil, u, mat(p+"ffn_down.weight", c.Dim, c.FFN))
		x = b.Op("add", nil, b.Op("add", nil, x, o), d) // parallel: both branches read h
	}
	h := b.Op("rms_norm", eps, b.Op("gather_rows", nil, x, rows), vec("output_norm.weight", c.Dim))
	logits := b.Op("matmul", nil, h, mat("output.weight", c.Vocab, c.Dim))
	b.Output(b.NamedOp(model.OutputLogits, "add", nil, logits, vec("output.bias", c.Vocab)))
	return b.Finish()
}

// demoPlan is a random demo model: weights N(0, 0.2), norms 1 + N(0, 0.1), so that attention
// is far from uniform and the logits are of order one.
func demoPlan(t *testing.T) *convert.Plan {
	cfg, err := synth.Options{Arch: demoArch, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, FFN: 48, Vocab: 300}.Config()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	p := &convert.Plan{Name: "demo", Config: cfg, Vocab: synth.ByteVocab()}
	shapes := cfg.Shapes()
	for _, name := range convert.OrderNames(shapes) {
		shape := shapes[name]
		v := make([]float32, 1)
		for _, d := range shape {
			v = make([]float32, len(v)*d)
		}
		for i := range v {
			if strings.Contains(name, "norm") {
				v[i] = float32(1 + 0.1*r.NormFloat64())
			} else {
				v[i] = float32(0.2 * r.NormFloat64())
			}
		}
		data := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
		}
		w := &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: data}
		p.Tensors = append(p.Tensors, convert.Tensor{Name: name, Type: tensor.F32, Shape: shape,
			Load: func() (*tensor.Tensor, error) { return w, nil }})
	}
	return p
}

// forwardLogits runs each sequence alone through m's KV cache (the serving executor), all
// rows' logits end to end.
func forwardLogits(t *testing.T, m *model.Model, seqs [][]int) []float32 {
	t.Helper()
	var all []float32
	for _, s := range seqs {
		l, err := m.Forward(m.NewCache(16), s, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, l...)
	}
	return all
}

func TestAddFamilyFromOneFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.gguf")
	if err := convert.WriteGGUF(path, demoPlan(t), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	m := b.Model
	m.Pool = kernels.Serial
	if m.Config.Arch != demoArch || m.Config.Tied {
		t.Fatalf("loaded config %+v", m.Config)
	}
	if v, ok := (&gguf.File{KVs: b.Meta}).Bool(demoArch + ".parallel_residual"); !ok || !v {
		t.Fatalf("the family's ToGGUF key is not in the file")
	}
	seqs := [][]int{{5, 17, 290, 3, 3, 44, 101}, {7, 8, 9, 250, 1}}
	got := forwardLogits(t, m, seqs)

	// The float64 reference interpreter over the same graph, the sequences laid end to end.
	g, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if c := g.OpCounts(); c["rms_norm"] != m.Config.Layers+1 || c["attention"] != m.Config.Layers {
		t.Fatalf("graph ops %v: not the demo's block (one norm per block)", c)
	}
	vals := map[string]*ref.Tensor{}
	for name, w := range m.Weights {
		if vals[name], err = ref.FromTensor(w); err != nil {
			t.Fatal(err)
		}
	}
	var toks, pos, rows []int32
	for _, s := range seqs {
		for i, tk := range s {
			rows = append(rows, int32(len(toks)))
			toks, pos = append(toks, int32(tk)), append(pos, int32(i))
		}
	}
	vals[model.InputTokens] = ref.Ints([]int{len(toks)}, toks)
	vals[model.InputPositions] = ref.Ints([]int{len(toks)}, pos)
	vals[model.InputLogitRows] = ref.Ints([]int{len(rows)}, rows)
	out, err := ref.Run(g, vals)
	if err != nil {
		t.Fatal(err)
	}
	want := out[0].F
	if len(want) != len(got) {
		t.Fatalf("ref gives %d logits, the executor %d", len(want), len(got))
	}
	var maxAbs, maxDiff float64
	for i := range want {
		maxAbs = math.Max(maxAbs, math.Abs(want[i]))
		maxDiff = math.Max(maxDiff, math.Abs(want[i]-float64(got[i])))
	}
	t.Logf("%s: max |logit| %.3g, executor vs float64 reference: max diff %.3g", demoArch, maxAbs, maxDiff)
	if maxAbs < 0.5 || maxDiff > 1e-4*maxAbs {
		t.Fatalf("executor vs reference: max diff %.3g at max |logit| %.3g", maxDiff, maxAbs)
	}

	// The same model through the family's Hugging Face names: written, loaded, same logits.
	hfDir := filepath.Join(dir, "hf")
	if err := convert.WriteHF(hfDir, demoPlan(t), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	hb, err := loader.Open(hfDir, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.Close() })
	hb.Model.Pool = kernels.Serial
	hf := forwardLogits(t, hb.Model, seqs)
	for i := range hf {
		if hf[i] != got[i] {
			t.Fatalf("Hugging Face copy: logit %d is %v, the GGUF's %v", i, hf[i], got[i])
		}
	}
}
