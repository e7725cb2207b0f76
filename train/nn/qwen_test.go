// Tests that the Qwen families train through the one graph like Llama: qwen2 (q/k/v biases,
// NeoX RoPE) and qwen3 (per-head q/k RMSNorm, NeoX RoPE, head dim free of dim/heads), with
// grouped-query heads, tied and untied. Their logits equal the engine's; 20 AdamW steps on a
// repeated batch bring the loss down; TP 2 and 4 match the unsplit model within 1e-5
// relative (the split sums round differently); pipeline stages (also with recomputation)
// match the whole model bit for bit. graph/ref's llama_grad_test.go checks their gradients
// against the float64 reference interpreter.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/model"
)

// qwenConfigs are qwen2- and qwen3-shaped variants of base, tied and untied.
func qwenConfigs(base model.Config) map[string]model.Config {
	out := map[string]model.Config{}
	for _, tied := range []bool{true, false} {
		q2, q3 := base, base
		q2.Arch, q2.QKVBias, q2.RopeNeoX, q2.Tied = "qwen2", true, true, tied
		q3.Arch, q3.QKNorm, q3.RopeNeoX, q3.Tied = "qwen3", true, true, tied
		q3.HeadDim = base.HeadDim + 2 // Qwen3's head dim is not dim/heads
		out[fmt.Sprintf("qwen2 tied=%v", tied)] = q2
		out[fmt.Sprintf("qwen3 tied=%v", tied)] = q3
	}
	return out
}

func TestQwenParamsAndInit(t *testing.T) {
	for name, cfg := range qwenConfigs(tinyConfig(false)) {
		m, err := New(cfg, 1, 4, testPool)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		shapes := cfg.Shapes()
		if len(m.Params()) != len(shapes) {
			t.Errorf("%s: %d params, family has %d tensors", name, len(m.Params()), len(shapes))
		}
		extras := 0
		for _, p := range m.Params() {
			if !slices.Equal(p.Shape, shapes[p.Name]) {
				t.Errorf("%s: %s shape %v, family %v", name, p.Name, p.Shape, shapes[p.Name])
			}
			want := float32(-1)
			switch {
			case strings.HasSuffix(p.Name, ".bias"):
				want, extras = 0, extras+1
			case strings.Contains(p.Name, "_norm."):
				want = 1
				if strings.Contains(p.Name, "attn_q_norm") || strings.Contains(p.Name, "attn_k_norm") {
					extras++
				}
			}
			for _, v := range p.W {
				if want >= 0 && v != want {
					t.Fatalf("%s: %s starts at %v, want %v", name, p.Name, v, want)
				}
			}
		}
		if want := 3 * cfg.Layers; cfg.QKNorm {
			want = 2 * cfg.Layers
			if extras != want {
				t.Errorf("%s: %d q/k norm weights, want %d", name, extras, want)
			}
		} else if extras != want {
			t.Errorf("%s: %d biases, want %d", name, extras, want)
		}
	}
}

func TestQwenLogitsMatchEngine(t *testing.T) {
	base := model.Config{Arch: "llama", Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 48,
		Vocab: 40, CtxLen: 32, RopeTheta: 1e6, NormEps: 1e-6}
	for name, cfg := range qwenConfigs(base) {
		const B, T = 2, 9
		m, err := New(cfg, B, T, testPool)
		if err != nil {
			t.Fatal(err)
		}
		randomize(m, 5, 0.15)
		tokens := randTokens(rand.New(rand.NewPCG(3, 3)), B*T, cfg.Vocab)
		m.Forward(tokens, nil, B, T)
		got := m.Logits()
		eng, err := model.New(cfg, tensors(m))
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
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
				worst = max(worst, math.Abs(float64(got[b*T*cfg.Vocab+i]-w)))
			}
		}
		if worst > 1e-4 {
			t.Errorf("%s: max |logit diff| vs engine %.3g > 1e-4", name, worst)
		}
	}
}

// TestQwenAdamW: 20 AdamW steps on one repeated batch from Init take the loss well down.
func TestQwenAdamW(t *testing.T) {
	const B, T, steps = 2, 8, 20
	for name, cfg := range qwenConfigs(tinyConfig(false)) {
		m, err := New(cfg, B, T, testPool)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(3)
		tokens, targets := strideBatch(rand.New(rand.NewPCG(1, 1)), B, T, cfg.Vocab)
		states := make([]adamState, len(m.Params()))
		for i, p := range m.Params() {
			states[i] = adamState{make([]float32, len(p.W)), make([]float32, len(p.W))}
		}
		var losses []float32
		for s := 1; s <= steps; s++ {
			m.ZeroGrad()
			losses = append(losses, m.Forward(tokens, targets, B, T))
			m.Backward()
			for i, p := range m.Params() {
				states[i].step(p.W, p.G, s, len(p.Shape) > 1)
			}
		}
		first, last := losses[0], losses[len(losses)-1]
		if !(last < 0.5*first) {
			t.Errorf("%s: loss %.4f -> %.4f over %d AdamW steps, want below half", name, first, last, steps)
		}
		t.Logf("%s: loss %.4f -> %.4f", name, first, last)
	}
}

// TestQwenTPMatchesUnsplit: a forward/backward on TP 2 and 4 ranks (4: one KV head each)
// against the unsplit model; loss, logit columns and gradient shards within 1e-5 relative.
func TestQwenTPMatchesUnsplit(t *testing.T) {
	const B, T, tol = 2, 7, 1e-5
	for name, cfg := range qwenConfigs(tpConfig(false)) {
		full, err := New(cfg, B, T, testPool)
		if err != nil {
			t.Fatal(err)
		}
		randomize(full, 3, 0.3) // biases and q/k norms random too
		r := rand.New(rand.NewPCG(4, 4))
		tokens, targets := randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)
		want := full.Forward(tokens, targets, B, T)
		full.Backward()
		shapes := cfg.Shapes()
		for _, size := range []int{2, 4} {
			ranks, _ := tpRanks(t, cfg, full, size, B, T, Options{})
			losses := make([]float32, size)
			onAll(ranks, func(r int, m *Model) {
				losses[r] = m.Forward(tokens, targets, B, T)
				m.Backward()
			})
			worst := 0.0
			for r, m := range ranks {
				if d := math.Abs(float64(losses[r]-want)) / float64(want); d > tol {
					t.Errorf("%s tp=%d rank %d: loss %g, unsplit %g (rel %.2g)", name, size, r, losses[r], want, d)
				}
				for i, p := range m.Params() {
					wg := make([]float32, len(p.G))
					Shard(wg, full.Params()[i].G, p.Name, shapes[p.Name], r, size)
					d := maxRelDiff(p.G, wg)
					worst = max(worst, d)
					if d > tol {
						t.Errorf("%s tp=%d rank %d: gradient of %s differs by %.2g relative", name, size, r, p.Name, d)
					}
				}
			}
			t.Logf("%s tp=%d: worst gradient difference %.2g relative", name, size, worst)
		}
	}
}

// TestQwenStagesMatchWholeModel: two and three pipeline stages, 1F1B with and without
// recomputation, give the whole model's losses and gradients bit for bit.
func TestQwenStagesMatchWholeModel(t *testing.T) {
	const B, T, M = 2, 5, 4
	const lossScale = 1.0 / M
	base := tinyConfig(false)
	base.Layers = 4
	for name, cfg := range qwenConfigs(base) {
		batches := testBatches(cfg, B, T, M)
		wantLoss, whole := flatRun(t, cfg, B, T, batches)
		for _, split := range [][]int{{0, 2, 4}, {0, 1, 3, 4}} {
			for _, recompute := range []bool{false, true} {
				n := fmt.Sprintf("%s split=%v recompute=%v", name, split, recompute)
				stages, losses := runPipeline(t, cfg, Options{Recompute: recompute}, whole, split, "1f1b", batches, B, T, lossScale)
				if !slices.Equal(losses, wantLoss) {
					t.Errorf("%s: losses %v, whole model %v", n, losses, wantLoss)
				}
				compareStageGrads(t, n, whole, stages, lossScale)
			}
		}
	}
}
