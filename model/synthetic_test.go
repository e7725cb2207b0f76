// Tests on small random Qwen2-shaped (q/k/v biases) and Qwen3-shaped (q/k norm) models built
// in memory: batched prefill equals token-by-token decode, and an independent float64
// forward pass written here agrees. Also the loaders' and forward pass's error reporting.
package model

import (
	"encoding/binary"
	"maps"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

func randWeights(cfg Config, seed int64) map[string]*tensor.Tensor {
	r := rand.New(rand.NewSource(seed))
	ws := map[string]*tensor.Tensor{}
	shapes := cfg.Shapes()
	// In name order: one generator draws every tensor, so map order would make another model
	// in every process (a test near its tolerance then failed one run in twenty).
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
	return ws
}

func qwenConfigs() []Config {
	base := Config{Dim: 48, Layers: 2, Heads: 6, KVHeads: 2, HeadDim: 8, FFN: 80, Vocab: 50,
		CtxLen: 64, RopeTheta: 1e6, RopeNeoX: true, NormEps: 1e-6}
	q2 := base
	q2.Arch, q2.QKVBias, q2.Tied = "qwen2", true, true
	q3 := base
	q3.Arch, q3.QKNorm, q3.HeadDim = "qwen3", true, 16 // head dim != Dim/Heads, as in Qwen3
	ll := base
	ll.Arch, ll.RopeNeoX, ll.KVHeads = "llama", false, 1 // MQA, normal rope, untied
	ll.RopeScaling = &RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 16}
	return []Config{q2, q3, ll}
}

// refForward is an independent float64 forward pass over the whole sequence (no cache);
// it returns logits [n][Vocab].
func refForward(t *testing.T, cfg Config, ws map[string]*tensor.Tensor, toks []int) [][]float64 {
	get := func(n string) []float64 {
		v, err := ws[n].Float32()
		if err != nil {
			t.Fatal(err)
		}
		o := make([]float64, len(v))
		for i, x := range v {
			o[i] = float64(x)
		}
		return o
	}
	// linear: w [out, in] times x [in].
	lin := func(w []float64, x []float64) []float64 {
		in := len(x)
		out := make([]float64, len(w)/in)
		for o := range out {
			for i := 0; i < in; i++ {
				out[o] += w[o*in+i] * x[i]
			}
		}
		return out
	}
	rms := func(x, w []float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(len(x))+float64(cfg.NormEps))
		o := make([]float64, len(x))
		for i := range x {
			o[i] = x[i] * s * w[i]
		}
		return o
	}
	hd := cfg.HeadDim
	var factors []float64
	if cfg.RopeScaling != nil {
		f, _ := kernels.Llama3Factors(hd, cfg.RopeTheta, *cfg.RopeScaling)
		for _, v := range f {
			factors = append(factors, float64(v))
		}
	}
	rope := func(x []float64, pos int) {
		for h := 0; h < len(x)/hd; h++ {
			v := x[h*hd : (h+1)*hd]
			for i := 0; i < hd/2; i++ {
				th := float64(pos) / math.Pow(cfg.RopeTheta, float64(2*i)/float64(hd))
				if factors != nil {
					th /= factors[i]
				}
				a, b := 2*i, 2*i+1
				if cfg.RopeNeoX {
					a, b = i, i+hd/2
				}
				x0, x1 := v[a], v[b]
				v[a], v[b] = x0*math.Cos(th)-x1*math.Sin(th), x0*math.Sin(th)+x1*math.Cos(th)
			}
		}
	}
	embd := get("token_embd.weight")
	n := len(toks)
	x := make([][]float64, n)
	for i, tk := range toks {
		x[i] = append([]float64(nil), embd[tk*cfg.Dim:(tk+1)*cfg.Dim]...)
	}
	for l := 0; l < cfg.Layers; l++ {
		p := "blk." + string(rune('0'+l)) + "."
		qs, ks, vs := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for i := range x {
			h := rms(x[i], get(p+"attn_norm.weight"))
			qs[i], ks[i], vs[i] = lin(get(p+"attn_q.weight"), h), lin(get(p+"attn_k.weight"), h), lin(get(p+"attn_v.weight"), h)
			if cfg.QKVBias {
				for j, b := range get(p + "attn_q.bias") {
					qs[i][j] += b
				}
				for j, b := range get(p + "attn_k.bias") {
					ks[i][j] += b
				}
				for j, b := range get(p + "attn_v.bias") {
					vs[i][j] += b
				}
			}
			if cfg.QKNorm {
				for h := 0; h < cfg.Heads; h++ {
					copy(qs[i][h*hd:], rms(qs[i][h*hd:(h+1)*hd], get(p+"attn_q_norm.weight")))
				}
				for h := 0; h < cfg.KVHeads; h++ {
					copy(ks[i][h*hd:], rms(ks[i][h*hd:(h+1)*hd], get(p+"attn_k_norm.weight")))
				}
			}
			rope(qs[i], i)
			rope(ks[i], i)
		}
		for i := range x {
			att := make([]float64, cfg.QDim())
			for h := 0; h < cfg.Heads; h++ {
				kh := h / (cfg.Heads / cfg.KVHeads)
				sc := make([]float64, i+1)
				var mx = math.Inf(-1)
				for j := 0; j <= i; j++ {
					for d := 0; d < hd; d++ {
						sc[j] += qs[i][h*hd+d] * ks[j][kh*hd+d]
					}
					sc[j] /= math.Sqrt(float64(hd))
					mx = math.Max(mx, sc[j])
				}
				var sum float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				for j := range sc {
					for d := 0; d < hd; d++ {
						att[h*hd+d] += sc[j] / sum * vs[j][kh*hd+d]
					}
				}
			}
			o := lin(get(p+"attn_output.weight"), att)
			for d := range x[i] {
				x[i][d] += o[d]
			}
			h := rms(x[i], get(p+"ffn_norm.weight"))
			g, u := lin(get(p+"ffn_gate.weight"), h), lin(get(p+"ffn_up.weight"), h)
			for d := range g {
				g[d] = g[d] / (1 + math.Exp(-g[d])) * u[d]
			}
			dn := lin(get(p+"ffn_down.weight"), g)
			for d := range x[i] {
				x[i][d] += dn[d]
			}
		}
	}
	outName := "output.weight"
	if cfg.Tied {
		outName = "token_embd.weight"
	}
	res := make([][]float64, n)
	for i := range x {
		res[i] = lin(get(outName), rms(x[i], get("output_norm.weight")))
	}
	return res
}

func TestSyntheticPrefillDecodeReference(t *testing.T) {
	toks := []int{1, 7, 49, 3, 3, 20, 11, 0, 42, 5, 17, 30}
	for _, cfg := range qwenConfigs() {
		t.Run(cfg.Arch, func(t *testing.T) {
			ws := randWeights(cfg, 9)
			m, err := New(cfg, ws)
			if err != nil {
				t.Fatal(err)
			}
			c := m.NewCache(len(toks))
			batch, err := m.Forward(c, toks, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			m.Pool = kernels.Serial
			c2 := m.NewCache(len(toks))
			ref := refForward(t, cfg, ws, toks)
			var maxDec, maxRef float64
			for i, tk := range toks {
				one, err := m.Decode(c2, tk)
				if err != nil {
					t.Fatal(err)
				}
				for j := range one {
					b := float64(batch[i*cfg.Vocab+j])
					maxDec = math.Max(maxDec, math.Abs(b-float64(one[j])))
					maxRef = math.Max(maxRef, math.Abs(b-ref[i][j]))
				}
			}
			t.Logf("batch vs decode %.3g, batch vs float64 reference %.3g", maxDec, maxRef)
			if maxDec > 1e-5 {
				t.Errorf("batched prefill and token-by-token decode differ by %g", maxDec)
			}
			if maxRef > 1e-4 {
				t.Errorf("forward and float64 reference differ by %g", maxRef)
			}
			// Split prefill (two batches) and last-row-only output agree too.
			c3 := m.NewCache(len(toks))
			if _, err := m.Forward(c3, toks[:5], 0, false); err != nil {
				t.Fatal(err)
			}
			last, err := m.Forward(c3, toks[5:], 5, false)
			if err != nil {
				t.Fatal(err)
			}
			for j := range last {
				if d := math.Abs(float64(last[j] - batch[(len(toks)-1)*cfg.Vocab+j])); d > 1e-5 {
					t.Fatalf("split prefill differs by %g", d)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	cfg := qwenConfigs()[0]
	ws := randWeights(cfg, 1)
	m, err := New(cfg, ws)
	if err != nil {
		t.Fatal(err)
	}
	c := m.NewCache(4)
	for _, tc := range []struct {
		toks  []int
		start int
		want  string
	}{
		{[]int{1, 50}, 0, "token 50 (batch row 1) out of range"},
		{[]int{-1}, 0, "out of range"},
		{[]int{1, 2, 3, 4, 5}, 0, "overflow the KV cache"},
		{[]int{1}, 3, "outside the cached"},
		{nil, 0, "no tokens"},
	} {
		if _, err := m.Forward(c, tc.toks, tc.start, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v at %d: got %v, want %q", tc.toks, tc.start, err, tc.want)
		}
	}
	// Shape mismatch names the tensor and both shapes.
	bad := randWeights(cfg, 1)
	bad["blk.1.ffn_up.weight"] = randWeights(Config{Arch: "llama", Dim: 48, Layers: 2, Heads: 6, KVHeads: 2, HeadDim: 8, FFN: 96, Vocab: 50, RopeTheta: 1, NormEps: 1}, 1)["blk.1.ffn_up.weight"]
	if _, err := New(cfg, bad); err == nil || !strings.Contains(err.Error(), "blk.1.ffn_up.weight: shape [96 48], config wants [80 48]") {
		t.Errorf("shape mismatch: %v", err)
	}
	delete(bad, "blk.0.attn_k.bias")
	if _, err := New(cfg, bad); err == nil || !strings.Contains(err.Error(), "blk.0.attn_k.bias missing") {
		t.Errorf("missing tensor: %v", err)
	}
	ok := randWeights(cfg, 1)
	cfg.QKVBias = false
	if _, err := New(cfg, ok); err == nil || !strings.Contains(err.Error(), "unexpected tensor blk.0.attn_k.bias") {
		t.Errorf("unexpected tensor: %v", err)
	}
}
