// Tests that a step through the graph executor is train/nn's step: the same loss and the same
// gradients, bit for bit, from the same weights and batch.
package trainexec_test

import (
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

// tinyConfigs are the llama shapes train/nn trains: grouped-query heads with tied embeddings,
// multi-head untied with Llama 3 RoPE scaling, and a wider multi-query one.
func tinyConfigs() map[string]model.Config {
	return map[string]model.Config{
		"gqa-tied": {Arch: "llama", Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 64,
			Vocab: 50, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5, Tied: true},
		"mha-untied": {Arch: "llama", Dim: 48, Layers: 3, Heads: 3, KVHeads: 3, HeadDim: 16, FFN: 96,
			Vocab: 70, CtxLen: 64, RopeTheta: 500000, NormEps: 1e-6,
			RopeScaling: &kernels.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 16}},
		// wide enough for the vectorised Gemm paths, one KV head
		"wide-mqa": {Arch: "llama", Dim: 128, Layers: 2, Heads: 4, KVHeads: 1, HeadDim: 32, FFN: 352,
			Vocab: 300, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5, Tied: true},
	}
}

// newPair builds an nn.Model with Init(seed) and a graph program bound to a copy of its
// weights with gradients of its own.
func newPair(t testing.TB, cfg model.Config, B, T int, pool *kernels.Pool) (*nn.Model, *trainexec.Program, []trainexec.Param) {
	t.Helper()
	m, err := nn.New(cfg, B, T, pool)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(7)
	var params []trainexec.Param
	for _, p := range m.Params() {
		params = append(params, trainexec.Param{Name: p.Name, W: append([]float32(nil), p.W...), G: make([]float32, len(p.G))})
	}
	prog, err := trainexec.ForModel(cfg, params, B, T, pool)
	if err != nil {
		t.Fatal(err)
	}
	return m, prog, params
}

func batch(r *rand.Rand, V, n int) (tok, tgt []int32) {
	tok, tgt = make([]int32, n), make([]int32, n)
	for i := range tok {
		tok[i], tgt[i] = int32(r.IntN(V)), int32(r.IntN(V))
	}
	return tok, tgt
}

func TestStepMatchesNN(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		t.Run(name, func(t *testing.T) {
			pool := kernels.NewPool(2)
			B, T := 3, 37
			m, prog, params := newPair(t, cfg, B, T, pool)
			r := rand.New(rand.NewPCG(1, 2))
			for step := 0; step < 2; step++ { // the second accumulates into the first's gradients
				tok, tgt := batch(r, cfg.Vocab, B*T)
				want := m.Forward(tok, tgt, B, T)
				m.Backward()
				got := prog.Forward(tok, tgt, B, T)
				prog.Backward()
				if got != want {
					t.Errorf("step %d: loss %v, nn %v", step, got, want)
				}
				for i, p := range m.Params() {
					g := params[i].G
					for j := range p.G {
						if g[j] != p.G[j] {
							t.Errorf("step %d: %s[%d] gradient %v, nn %v", step, p.Name, j, g[j], p.G[j])
							break
						}
					}
				}
				lg, lw := prog.Logits(), m.Logits()
				for j := range lw {
					if lg[j] != lw[j] {
						t.Fatalf("logit %d: %v, nn %v", j, lg[j], lw[j])
					}
				}
			}
		})
	}
}

// The comparison above can fail: a gradient of a different batch differs.
func TestStepComparisonCanFail(t *testing.T) {
	cfg := tinyConfigs()["gqa-tied"]
	pool := kernels.NewPool(2)
	B, T := 2, 9
	m, prog, params := newPair(t, cfg, B, T, pool)
	r := rand.New(rand.NewPCG(3, 4))
	tok, tgt := batch(r, cfg.Vocab, B*T)
	m.Forward(tok, tgt, B, T)
	m.Backward()
	tgt[0] = (tgt[0] + 1) % int32(cfg.Vocab)
	prog.Forward(tok, tgt, B, T)
	prog.Backward()
	diff, nonzero := 0, 0
	for i, p := range m.Params() {
		for j := range p.G {
			if params[i].G[j] != p.G[j] {
				diff++
			}
			if p.G[j] != 0 {
				nonzero++
			}
		}
	}
	if diff == 0 || nonzero < len(m.Params())*8 {
		t.Fatalf("%d gradients differ, %d nonzero", diff, nonzero)
	}
}
