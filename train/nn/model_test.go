// This file checks the whole model: its gradient against finite differences of the float64
// reference network (tied and untied, GQA), its logits against the inference engine's
// (model.Model) on the same weights, bit-identical results across pools and repeated runs,
// gradient accumulation, and the refusal of unsupported configurations and bad batches.
package nn

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

func tinyConfig(tied bool) model.Config {
	return model.Config{Arch: "llama", Dim: 12, Layers: 2, Heads: 3, KVHeads: 1, HeadDim: 4, FFN: 10,
		Vocab: 11, CtxLen: 16, RopeTheta: 10000, NormEps: 1e-5, Tied: tied}
}

// randomize fills every parameter with N(0, std) (norm weights around 1) from seed.
func randomize(m *Model, seed uint64, std float64) {
	r := rand.New(rand.NewPCG(seed, 99))
	for _, p := range m.Params() {
		for i := range p.W {
			if len(p.Shape) == 1 {
				p.W[i] = float32(1 + 0.3*r.NormFloat64())
			} else {
				p.W[i] = float32(std * r.NormFloat64())
			}
		}
	}
}

func randTokens(r *rand.Rand, n, vocab int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(r.IntN(vocab))
	}
	return t
}

// TestModelGrad checks d(loss)/d(every parameter) against central differences of the float64
// reference model.
func TestModelGrad(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := tinyConfig(tied)
		m, err := New(cfg, 2, 5, testPool)
		if err != nil {
			t.Fatal(err)
		}
		randomize(m, 1, 0.5)
		r := rand.New(rand.NewPCG(2, 2))
		B, T := 2, 5
		tokens, targets := randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)
		loss := m.Forward(tokens, targets, B, T)
		m.ZeroGrad()
		m.Backward()
		w, g := m.Flat()
		w64 := to64(w)
		logits64, loss64 := model64(&cfg, m.Params(), w64, tokens, targets, B, T)
		if math.Abs(float64(loss)-loss64) > 1e-5*loss64 {
			t.Errorf("tied=%v: loss %g, float64 reference %g", tied, loss, loss64)
		}
		checkClose(t, "logits", m.Logits(), logits64, 1e-5, 1e-4)
		num := fdGrad(w64, func() float64 { _, l := model64(&cfg, m.Params(), w64, tokens, targets, B, T); return l })
		off := 0
		for _, p := range m.Params() {
			n := len(p.W)
			checkClose(t, p.Name, g[off:off+n], num[off:off+n], 2e-5, 2e-3)
			off += n
		}
	}
}

// tensors wraps the model's parameters as F32 tensors under their GGUF names.
func tensors(m *Model) map[string]*tensor.Tensor {
	ws := map[string]*tensor.Tensor{}
	for _, p := range m.Params() {
		b := make([]byte, 4*len(p.W))
		for i, v := range p.W {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		ws[p.Name] = &tensor.Tensor{Name: p.Name, Type: tensor.F32, Shape: slices.Clone(p.Shape), Data: b}
	}
	return ws
}

// TestLogitsMatchEngine runs the same weights through the inference engine (model.Model, one
// sequence at a time through its KV cache) and compares every position's logits.
func TestLogitsMatchEngine(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  model.Config
	}{
		{"gqa-untied", model.Config{Arch: "llama", Dim: 64, Layers: 3, Heads: 8, KVHeads: 2, HeadDim: 8, FFN: 96,
			Vocab: 67, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5}},
		{"mha-tied-odd", model.Config{Arch: "llama", Dim: 36, Layers: 2, Heads: 3, KVHeads: 3, HeadDim: 12, FFN: 50,
			Vocab: 45, CtxLen: 64, RopeTheta: 500000, NormEps: 1e-6, Tied: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			B, T := 3, 23
			m, err := New(tc.cfg, B, T, testPool)
			if err != nil {
				t.Fatal(err)
			}
			randomize(m, 5, 0.15)
			r := rand.New(rand.NewPCG(3, 3))
			tokens := randTokens(r, B*T, tc.cfg.Vocab)
			if loss := m.Forward(tokens, nil, B, T); loss != 0 {
				t.Errorf("Forward without targets returned %g", loss)
			}
			got := m.Logits()
			eng, err := model.New(tc.cfg, tensors(m))
			if err != nil {
				t.Fatal(err)
			}
			V, worst := tc.cfg.Vocab, 0.0
			for b := 0; b < B; b++ {
				ids := make([]int, T)
				for i := range ids {
					ids[i] = int(tokens[b*T+i])
				}
				want, err := eng.Forward(eng.NewCache(T), ids, 0, true)
				if err != nil {
					t.Fatal(err)
				}
				for i, w := range want {
					worst = max(worst, math.Abs(float64(got[b*T*V+i]-w)))
				}
			}
			t.Logf("max |logit diff| vs engine: %.3g", worst)
			if worst > 1e-4 {
				t.Errorf("max |logit diff| vs engine %.3g > 1e-4", worst)
			}
		})
	}
}

// step runs one Forward+Backward from zero gradients and returns the loss and a copy of the
// gradients.
func step(t *testing.T, cfg model.Config, pool *kernels.Pool, tokens, targets []int32, B, T int) (float32, []float32) {
	m, err := New(cfg, B, T, pool)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(42)
	loss := m.Forward(tokens, targets, B, T)
	m.Backward()
	_, g := m.Flat()
	return loss, slices.Clone(g)
}

// TestDeterministic: the same seed and data give bit-identical loss and gradients on pools of
// 1, 2 and 3 workers, run after run.
func TestDeterministic(t *testing.T) {
	cfg := model.Config{Arch: "llama", Dim: 48, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 12, FFN: 72,
		Vocab: 97, CtxLen: 32, RopeTheta: 10000, NormEps: 1e-5}
	r := rand.New(rand.NewPCG(4, 4))
	B, T := 3, 17
	tokens, targets := randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)
	loss0, g0 := step(t, cfg, kernels.Serial, tokens, targets, B, T)
	for _, pool := range []*kernels.Pool{testPool, kernels.NewPool(2), testPool} {
		loss, g := step(t, cfg, pool, tokens, targets, B, T)
		if math.Float32bits(loss) != math.Float32bits(loss0) {
			t.Errorf("%d workers: loss %v, serial %v", pool.Workers(), loss, loss0)
		}
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(g0[i]) {
				t.Fatalf("%d workers: gradient %d = %v, serial %v", pool.Workers(), i, g[i], g0[i])
			}
		}
	}
}

// TestAccumulate: two Backward calls without ZeroGrad add up.
func TestAccumulate(t *testing.T) {
	cfg := tinyConfig(false)
	m, err := New(cfg, 2, 4, testPool)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(7)
	r := rand.New(rand.NewPCG(5, 5))
	a, at := randTokens(r, 8, cfg.Vocab), randTokens(r, 8, cfg.Vocab)
	b, bt := randTokens(r, 4, cfg.Vocab), randTokens(r, 4, cfg.Vocab)
	_, g := m.Flat()
	m.Forward(a, at, 2, 4)
	m.Backward()
	ga := slices.Clone(g)
	m.ZeroGrad()
	m.Forward(b, bt, 1, 4)
	m.Backward()
	gb := slices.Clone(g)
	m.Forward(a, at, 2, 4)
	m.Backward() // g = gb + ga
	for i := range g {
		if d := math.Abs(float64(g[i] - (ga[i] + gb[i]))); d > 1e-6 {
			t.Fatalf("gradient %d: %v after accumulating, want %v + %v", i, g[i], ga[i], gb[i])
		}
	}
}

func TestInitAndLayout(t *testing.T) {
	cfg := tinyConfig(false)
	m, err := New(cfg, 1, 4, testPool)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(3)
	shapes := cfg.Shapes()
	w, _ := m.Flat()
	off := 0
	for i, p := range m.Params() {
		if !slices.Equal(p.Shape, shapes[p.Name]) {
			t.Errorf("%s: shape %v, config says %v", p.Name, p.Shape, shapes[p.Name])
		}
		if &p.W[0] != &w[off] {
			t.Errorf("%s (param %d) is not at offset %d of the flat buffer", p.Name, i, off)
		}
		off += len(p.W)
		var ss float64
		for _, v := range p.W {
			ss += float64(v) * float64(v)
		}
		rms := math.Sqrt(ss / float64(len(p.W)))
		want := 0.02
		switch {
		case len(p.Shape) == 1:
			want = 1
		case strings.HasSuffix(p.Name, "attn_output.weight") || strings.HasSuffix(p.Name, "ffn_down.weight"):
			want = 0.02 / math.Sqrt(2*float64(cfg.Layers))
		}
		if math.Abs(rms-want) > 0.35*want {
			t.Errorf("%s: rms %.4f after Init, want about %.4f", p.Name, rms, want)
		}
	}
	if len(shapes) != len(m.Params()) || int64(off) != m.NumParams() {
		t.Errorf("%d params (%d values), config has %d tensors; NumParams %d", len(m.Params()), off, len(shapes), m.NumParams())
	}
	m2, _ := New(cfg, 1, 4, testPool)
	m2.Init(3)
	w2, _ := m2.Flat()
	if !slices.Equal(w, w2) {
		t.Error("Init(3) twice gave different weights")
	}
	m2.Init(4)
	if slices.Equal(w, w2) {
		t.Error("Init(3) and Init(4) gave the same weights")
	}
}

func TestRefusals(t *testing.T) {
	ok := tinyConfig(true)
	for name, mod := range map[string]func(*model.Config){
		"arch":  func(c *model.Config) { c.Arch = "gpt2" }, // no registered family
		"heads": func(c *model.Config) { c.KVHeads = 2 },
	} {
		c := ok
		mod(&c)
		if _, err := New(c, 1, 4, nil); err == nil {
			t.Errorf("%s: New accepted %+v", name, c)
		}
	}
	if _, err := New(ok, 1, 17, nil); err == nil {
		t.Error("New accepted T beyond the context length")
	}
	m, err := New(ok, 2, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	good := []int32{1, 2, 3, 4}
	for name, err := range map[string]error{
		"B too big":     m.Validate(good, nil, 3, 4),
		"short tokens":  m.Validate(good, nil, 2, 4),
		"bad token":     m.Validate([]int32{1, 2, 11, 0}, nil, 1, 4),
		"negative":      m.Validate(good, []int32{0, -2, 0, 0}, 1, 4),
		"short targets": m.Validate(good, []int32{0}, 1, 4),
	} {
		if err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
	if err := m.Validate(good, good, 1, 4); err != nil {
		t.Errorf("valid batch rejected: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "vocabulary") {
				t.Errorf("Forward of a bad token: panic %v, want the Validate message", r)
			}
		}()
		m.Forward([]int32{1, 2, 99, 0}, nil, 1, 4)
	}()
}

// TestRealModelMatchesEngine copies a real checkpoint (stories260K, F32 GGUF, from testdata)
// into the trainer's parameters and compares its logits, and the loss of a batch, with the
// engine's on the same file.
func TestRealModelMatchesEngine(t *testing.T) {
	path := fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")
	eng, err := model.OpenGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	eng.Pool = testPool
	B, T := 2, 32
	m, err := New(eng.Config, B, T, testPool)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() {
		w, err := eng.Weights[p.Name].Float32()
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		copy(p.W, w)
	}
	r := rand.New(rand.NewPCG(9, 9))
	V := eng.Config.Vocab
	tokens, targets := randTokens(r, B*T, V), randTokens(r, B*T, V)
	loss := m.Forward(tokens, targets, B, T)
	got := m.Logits()
	var worst, nll float64
	for b := 0; b < B; b++ {
		ids := make([]int, T)
		for i := range ids {
			ids[i] = int(tokens[b*T+i])
		}
		want, err := eng.Forward(eng.NewCache(T), ids, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			worst = max(worst, math.Abs(float64(got[b*T*V+i]-w)))
		}
		for i := 0; i < T; i++ {
			row := to64(want[i*V : (i+1)*V])
			nll += crossEntropy64(row, targets[b*T+i:b*T+i+1], 1, V)
		}
	}
	nll /= float64(B * T)
	t.Logf("stories260K: max |logit diff| vs engine %.3g, loss %.6f vs %.6f", worst, loss, nll)
	if worst > 1e-4 {
		t.Errorf("max |logit diff| vs engine %.3g > 1e-4", worst)
	}
	if math.Abs(float64(loss)-nll) > 1e-5*nll {
		t.Errorf("loss %.6f, engine logits give %.6f", loss, nll)
	}
}
