package lora

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

var allMods = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// testConfig is a small llama (adjacent-pair RoPE: q/k rows permuted from HF's layout).
func testConfig() model.Config {
	return model.Config{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 96,
		Vocab: 61, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5}
}

// testModel is a random F32 model of cfg (weights N(0, 0.1)).
func testModel(t *testing.T, cfg model.Config, seed uint64) *model.Model {
	t.Helper()
	ws := map[string]*tensor.Tensor{}
	for n, s := range cfg.Shapes() {
		ws[n] = synth.GenerateStd(n, s, seed, 0.1)
	}
	m, err := model.New(cfg, ws)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func randomAdapter(t *testing.T, cfg *model.Config, r int, seed uint64) *Adapter {
	t.Helper()
	a, err := Random("a", cfg, allMods, r, 2*float64(r), 0.05, seed)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func samePairs(t *testing.T, a, b *Adapter) {
	t.Helper()
	if !slices.Equal(a.Names(), b.Names()) {
		t.Fatalf("names %v vs %v", a.Names(), b.Names())
	}
	for n, p := range a.Pairs {
		q := b.Pairs[n]
		if p.Rank != q.Rank || p.In != q.In || p.Out != q.Out || p.Scale != q.Scale {
			t.Fatalf("%s: rank/in/out/scale %d %d %d %g vs %d %d %d %g", n, p.Rank, p.In, p.Out, p.Scale, q.Rank, q.In, q.Out, q.Scale)
		}
		if !slices.Equal(p.A, q.A) || !slices.Equal(p.B, q.B) {
			t.Fatalf("%s: A or B differ", n)
		}
	}
}

func TestPEFTRoundTrip(t *testing.T) {
	cfg := testConfig()
	a := randomAdapter(t, &cfg, 8, 1)
	a.Config.BaseModel = "some/base"
	a.Config.LoraDropout = 0.05
	dir := t.TempDir()
	if err := WritePEFT(dir, a, &cfg); err != nil {
		t.Fatal(err)
	}
	// The files are PEFT's: config keys and tensor names and shapes.
	var raw map[string]any
	js, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"peft_type": "LORA", "r": 8.0, "lora_alpha": 16.0, "base_model_name_or_path": "some/base",
		"task_type": "CAUSAL_LM", "bias": "none", "use_rslora": false, "lora_dropout": 0.05} {
		if raw[k] != want {
			t.Errorf("%s = %v, want %v", k, raw[k], want)
		}
	}
	if tm, _ := raw["target_modules"].([]any); len(tm) != 7 || tm[0] != "q_proj" {
		t.Errorf("target_modules = %v", raw["target_modules"])
	}
	f, err := safetensors.Open(filepath.Join(dir, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Tensors) != 2*7*cfg.Layers {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	qa, ok := f.Tensor("base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight")
	qb, ok2 := f.Tensor("base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight")
	db, ok3 := f.Tensor("base_model.model.model.layers.0.mlp.down_proj.lora_B.weight")
	if !ok || !ok2 || !ok3 {
		t.Fatal("PEFT tensor names missing")
	}
	if !slices.Equal(qa.Shape, []int{8, cfg.Dim}) || !slices.Equal(qb.Shape, []int{cfg.QDim(), 8}) || !slices.Equal(db.Shape, []int{cfg.Dim, 8}) {
		t.Fatalf("shapes %v %v %v", qa.Shape, qb.Shape, db.Shape)
	}
	// q's B is in HF's rotate-half row order in the file: permuting it gives ours.
	p, err := model.PermuteRope(qb, cfg.Heads)
	if err != nil {
		t.Fatal(err)
	}
	pv, _ := p.Float32()
	if !slices.Equal(pv, a.Pairs["blk.1.attn_q.weight"].B) {
		t.Fatal("q_proj lora_B is not in HF's layout in the file")
	}
	if fv, _ := qb.Float32(); slices.Equal(fv, a.Pairs["blk.1.attn_q.weight"].B) {
		t.Fatal("q_proj lora_B was not permuted at all")
	}
	b, err := Open(dir, &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	samePairs(t, a, b)
	if b.Config.BaseModel != "some/base" || b.Config.R != 8 || b.Config.LoraAlpha != 16 {
		t.Fatalf("config %+v", b.Config)
	}
}

func TestRSLoRAAndPatterns(t *testing.T) {
	c, err := parseConfig([]byte(`{"peft_type":"LORA","r":16,"lora_alpha":32,"use_rslora":true,"target_modules":"all-linear",
		"rank_pattern":{"model.layers.1.self_attn.q_proj":4},"alpha_pattern":{"v_proj":8}}`), "x")
	if err != nil {
		t.Fatal(err)
	}
	if r, a := c.moduleParams("model.layers.1.self_attn.q_proj"); r != 4 || a != 32 {
		t.Fatalf("q_proj: r %d alpha %g", r, a)
	}
	if r, a := c.moduleParams("model.layers.0.self_attn.q_proj"); r != 16 || a != 32 {
		t.Fatalf("layer 0 q_proj: r %d alpha %g", r, a)
	}
	if r, a := c.moduleParams("model.layers.0.self_attn.v_proj"); r != 16 || a != 8 {
		t.Fatalf("v_proj: r %d alpha %g", r, a)
	}
	if s := ScaleOf(32, 16, true); s != 8 {
		t.Fatalf("rslora scale %g, want 32/sqrt(16) = 8", s)
	}
	for _, bad := range []string{`{"peft_type":"IA3","r":8,"lora_alpha":8}`, `{"peft_type":"LORA","r":8,"lora_alpha":8,"use_dora":true}`,
		`{"peft_type":"LORA","r":8,"lora_alpha":8,"target_modules":["qkv"]}`, `{"peft_type":"LORA","r":0,"lora_alpha":8}`} {
		if _, err := parseConfig([]byte(bad), "adapter_config.json"); err == nil || !strings.Contains(err.Error(), "adapter_config.json") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

func TestGGUFRoundTrip(t *testing.T) {
	cfg := testConfig()
	a := randomAdapter(t, &cfg, 4, 2)
	path := filepath.Join(t.TempDir(), "a.gguf")
	if err := WriteGGUF(path, a, cfg.Arch); err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	samePairs(t, a, b)
	if _, err := ReadGGUF(path, "qwen2"); err == nil || !strings.Contains(err.Error(), "general.architecture") {
		t.Fatalf("arch mismatch: %v", err)
	}
	// rsLoRA's scale alpha/sqrt(r) is alpha*sqrt(r)/r in llama.cpp's alpha/r.
	for _, p := range a.Pairs {
		p.Scale = ScaleOf(p.Alpha, p.Rank, true)
	}
	if err := WriteGGUF(path, a, cfg.Arch); err != nil {
		t.Fatal(err)
	}
	if b, err = ReadGGUF(path, ""); err != nil {
		t.Fatal(err)
	}
	for n, p := range a.Pairs {
		if d := math.Abs(float64(b.Pairs[n].Scale - p.Scale)); d > 1e-6 {
			t.Fatalf("%s: scale %g vs %g", n, b.Pairs[n].Scale, p.Scale)
		}
	}
}

func TestWrongBase(t *testing.T) {
	cfg := testConfig()
	a := randomAdapter(t, &cfg, 4, 3)
	dir := t.TempDir()
	if err := WritePEFT(dir, a, &cfg); err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.FFN = 128
	m := testModel(t, other, 1)
	_, err := Open(dir, &other, m.Weights)
	if err == nil || !strings.Contains(err.Error(), "gate_proj.lora_A.weight") || !strings.Contains(err.Error(), "[96 64]") || !strings.Contains(err.Error(), "[128 64]") {
		t.Fatalf("shape mismatch error: %v", err)
	}
	fewer := cfg
	fewer.Layers = 1
	m = testModel(t, fewer, 1)
	if _, err = Open(dir, &fewer, m.Weights); err == nil || !strings.Contains(err.Error(), "layers.1") || !strings.Contains(err.Error(), "does not have") {
		t.Fatalf("name mismatch error: %v", err)
	}
}

// TestApplySegsMatchesReference: the gathered low-rank products of interleaved segments of two
// adapters (and base rows) equal the plain float64 reference row by row.
func TestApplySegsMatchesReference(t *testing.T) {
	for _, ref := range []bool{false, true} { // the assembly Dot/Axpy, and the pure-Go ones
		kernels.Reference = ref
		testApplySegs(t)
	}
	kernels.Reference = false
}

func testApplySegs(t *testing.T) {
	cfg := testConfig()
	pairs := map[uint32]*Pair{
		3: randomAdapter(t, &cfg, 16, 4).Pairs["blk.0.ffn_down.weight"],
		5: randomAdapter(t, &cfg, 8, 5).Pairs["blk.0.ffn_down.weight"],
	}
	p := pairs[3]
	const m = 9
	segs := []exec.LoRASeg{seg(0, 2, 3), seg(2, 3, 0), seg(3, 6, 5), seg(6, 7, 3), seg(7, 9, 5)}
	x := synth.GenerateStd("x", []int{m, p.In}, 9, 1)
	xv, _ := x.Float32()
	o1, o2 := make([]float32, m*p.Out), make([]float32, m*p.Out)
	for i := range o1 {
		o1[i], o2[i] = float32(i%7), float32(i%7)
	}
	if err := applySegs(nil, segs, func(id uint32) *Pair { return pairs[id] }, "w", o1, xv, m, p.In, p.Out); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if s.Adapter != 0 {
			pairs[s.Adapter].addRowsRef(o2, xv, s.Start, s.End)
		}
	}
	for i := range o1 {
		if d := math.Abs(float64(o1[i] - o2[i])); d > 1e-5*(1+math.Abs(float64(o2[i]))) {
			t.Fatalf("value %d (row %d): %g vs reference %g", i, i/p.Out, o1[i], o2[i])
		}
	}
	if err := applySegs(nil, []exec.LoRASeg{seg(0, 10, 3)}, func(id uint32) *Pair { return pairs[id] }, "w", o1, xv, m, p.In, p.Out); err == nil {
		t.Fatal("a segment past the batch was accepted")
	}
}

func seg(start, end int, a uint32) exec.LoRASeg {
	return exec.LoRASeg{Start: start, End: end, Adapter: a}
}

func TestNewSet(t *testing.T) {
	cfg := testConfig()
	a := New("t", Config{R: 4, LoraAlpha: 8, TargetModules: Targets{List: []string{"v_proj"}}})
	if err := a.Set(1, "v_proj", make([]float32, 4*cfg.Dim), make([]float32, cfg.KVDim()*4), cfg.Dim, cfg.KVDim()); err != nil {
		t.Fatal(err)
	}
	if p := a.Pairs["blk.1.attn_v.weight"]; p == nil || p.Scale != 2 || p.Rank != 4 {
		t.Fatalf("pair %+v", p)
	}
	if err := a.Set(0, "v_proj", make([]float32, 4*cfg.Dim), make([]float32, 3), cfg.Dim, cfg.KVDim()); err == nil {
		t.Fatal("a B of the wrong size was accepted")
	}
	dir := t.TempDir()
	if err := WritePEFT(dir, a, &cfg); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadPEFT(dir, &cfg); err != nil || len(b.Pairs) != 1 {
		t.Fatalf("%v %v", b, err)
	}
}
