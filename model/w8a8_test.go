package model

import (
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func w8a8TestConfig() Config {
	return Config{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 96, Vocab: 50,
		CtxLen: 64, RopeTheta: 1e4, NormEps: 1e-5}
}

// w8a8TestWeights are random weights with outlier channels in the norm weights (so the
// matmul inputs after them have a few channels 20x larger: what SmoothQuant is for).
// (randWeights draws in map order: make them once, hand out shallow copies.)
func w8a8TestWeights(cfg Config) map[string]*tensor.Tensor {
	if w8a8Cached == nil {
		w8a8Cached = w8a8MakeWeights(cfg)
	}
	ws := make(map[string]*tensor.Tensor, len(w8a8Cached))
	for n, t := range w8a8Cached {
		ws[n] = t
	}
	return ws
}

var w8a8Cached map[string]*tensor.Tensor

// w8a8MakeWeights: randWeights' distribution, drawn in name order (deterministic).
func w8a8MakeWeights(cfg Config) map[string]*tensor.Tensor {
	r := rand.New(rand.NewPCG(21, 8))
	ws := map[string]*tensor.Tensor{}
	shapes := cfg.Shapes()
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		shape := shapes[name]
		n := 1
		for _, d := range shape {
			n *= d
		}
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			v := r.NormFloat64() * 0.2
			if len(shape) == 1 && strings.HasSuffix(name, "norm.weight") {
				v = 1 + 0.1*r.NormFloat64()
			}
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		}
		ws[name] = &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: b}
	}
	for name, t := range ws {
		if strings.HasSuffix(name, "attn_norm.weight") || strings.HasSuffix(name, "ffn_norm.weight") {
			for _, j := range []int{3, 17, 40} {
				v := math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*j:]))
				binary.LittleEndian.PutUint32(t.Data[4*j:], math.Float32bits(20*v))
			}
		}
	}
	return ws
}

func w8a8Logits(t *testing.T, m *Model, toks []int) []float32 {
	t.Helper()
	out, err := m.Forward(m.NewCache(len(toks)), toks, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyW8A8: the block matmul weights become W8A8 (norms F32, embeddings untouched), the
// logits stay close to the float model's, with SmoothQuant's scales (from statistics the
// observer collected on a forward pass) closer than without; bad statistics are errors
// naming the tensor.
func TestApplyW8A8(t *testing.T) {
	cfg := w8a8TestConfig()
	toks := []int{1, 7, 49, 3, 3, 20, 11, 0, 42, 5, 17, 30, 8, 9, 10, 2, 4, 6}
	base, err := New(cfg, w8a8TestWeights(cfg))
	if err != nil {
		t.Fatal(err)
	}
	stats := NewW8A8Stats()
	if err := stats.Run(base, toks, len(toks)); err != nil {
		t.Fatal(err)
	}
	want := w8a8Logits(t, base, toks)
	if stats.Tokens != len(toks) || len(stats.Max["blk.0.attn_q.weight"]) != cfg.Dim || len(stats.Max["blk.1.ffn_down.weight"]) != cfg.FFN {
		t.Fatalf("statistics: %d tokens, %d inputs", stats.Tokens, len(stats.Max))
	}
	errOf := func(o W8A8Options) (float64, *Model) {
		m, err := New(cfg, w8a8TestWeights(cfg))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := m.ApplyW8A8(o)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Converted != 7*cfg.Layers {
			t.Fatalf("converted %d weights, want %d", rep.Converted, 7*cfg.Layers)
		}
		got := w8a8Logits(t, m, toks)
		var d, s float64
		for i := range want {
			d = max(d, math.Abs(float64(got[i]-want[i])))
			s = max(s, math.Abs(float64(want[i])))
		}
		return d / s, m
	}
	plain, m := errOf(W8A8Options{})
	smooth, ms := errOf(W8A8Options{Stats: stats.Max})
	t.Logf("max |Δlogit| / max |logit|: plain %.4f, smoothed %.4f", plain, smooth)
	// (the outlier channels are 20x: unsmoothed, the other channels get ~3 levels per token)
	if smooth > 0.2 || smooth > plain/2 {
		t.Errorf("W8A8 logits too far from the float model: plain %.4f, smoothed %.4f", plain, smooth)
	}
	if m.Weights["blk.0.attn_q.weight"].Type != tensor.W8A8 || ms.Weights["blk.1.ffn_down.weight"].Type != tensor.W8A8 ||
		ms.Weights["token_embd.weight"].Type != tensor.F32 || ms.Weights["blk.0.attn_norm.weight"].Type != tensor.F32 {
		t.Error("wrong weight types after ApplyW8A8")
	}
	// bad input
	bad := map[string][]float32{"blk.0.attn_q.weight": make([]float32, 5)}
	m2, _ := New(cfg, w8a8TestWeights(cfg))
	if _, err := m2.ApplyW8A8(W8A8Options{Stats: bad}); err == nil || !strings.Contains(err.Error(), "blk.0.attn_q.weight") {
		t.Errorf("statistics of the wrong size: error %v", err)
	}
	if _, err := m2.ApplyW8A8(W8A8Options{Alpha: 2, Stats: stats.Max}); err == nil {
		t.Error("alpha 2 accepted")
	}
	c := cfg
	c.Arch = "gemma2"
	m3 := &Model{Config: c}
	if _, err := m3.ApplyW8A8(W8A8Options{}); err == nil || !strings.Contains(err.Error(), "gemma2") {
		t.Errorf("unsupported architecture: error %v", err)
	}
}
