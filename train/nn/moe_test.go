// Tests that a mixture of experts (Mixtral-style) trains through train/nn with activation
// recomputation: the same loss, load-balancing loss and gradients as without.
// graph/ref's moe_train_test.go checks the gradients against the float64 reference.
package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/model"
)

func TestMoERecompute(t *testing.T) {
	cfg := model.Config{Arch: "llama", Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 24,
		Vocab: 40, CtxLen: 16, RopeTheta: 10000, NormEps: 1e-5, Experts: 4, ExpertsUsed: 2, ExpertsNorm: true}
	const B, T = 2, 8
	tokens, targets := randTokens(rand.New(rand.NewPCG(1, 2)), B*T, cfg.Vocab), randTokens(rand.New(rand.NewPCG(3, 4)), B*T, cfg.Vocab)
	run := func(recompute bool) (float32, float32, []float32) {
		m, err := NewWith(cfg, B, T, testPool, Options{Recompute: recompute, MoEAuxCoef: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		m.Init(5)
		loss := m.Forward(tokens, targets, B, T)
		m.Backward()
		_, g := m.Flat()
		return loss, m.AuxLoss(), g
	}
	l0, a0, g0 := run(false)
	l1, a1, g1 := run(true)
	if l0 != l1 || a0 != a1 || a0 == 0 {
		t.Fatalf("loss %v, aux %v; with recompute %v, %v", l0, a0, l1, a1)
	}
	for i := range g0 {
		if g0[i] != g1[i] {
			t.Fatalf("gradient %d: %v, with recompute %v", i, g0[i], g1[i])
		}
	}
}
