// Tests of the whole Llama-family network's backward graph (Llama, Qwen2, Qwen3): model.BuildGraph's graph with the mean
// cross-entropy over targets (logit_rows = every row), 2 sequences × 8 tokens, differentiated
// by graph.Grad with respect to every weight and run by ref. Its gradients equal central
// finite differences of the loss on a sample of weight entries, and train/nn's backward (the
// same graph compiled by graph/exec/trainexec, float32) within 1e-4 relative per tensor.
package ref_test

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

const trainB, trainT = 2, 8

func llamaConfigs() map[string]model.Config {
	base := model.Config{Arch: "llama", Dim: 16, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 4, FFN: 32,
		Vocab: 24, CtxLen: trainT, RopeTheta: 10000, NormEps: 1e-5}
	tied := base
	tied.Tied = true
	tied.RopeScaling = &model.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 4}
	// Qwen2 (q/k/v biases, NeoX RoPE) untied and Qwen3 (per-head q/k norms, NeoX RoPE, a head
	// dim free of dim/heads) tied, both with grouped-query heads.
	qwen2, qwen3 := base, base
	qwen2.Arch, qwen2.QKVBias, qwen2.RopeNeoX, qwen2.RopeTheta, qwen2.NormEps = "qwen2", true, true, 1e6, 1e-6
	qwen3.Arch, qwen3.QKNorm, qwen3.RopeNeoX, qwen3.HeadDim, qwen3.Tied = "qwen3", true, true, 6, true
	return map[string]model.Config{"untied": base, "tied-llama3": tied, "qwen2-untied": qwen2, "qwen3-tied": qwen3}
}

// trainSetup returns the loss graph of cfg, its gradient graph with respect to every weight
// but RoPE's divisors, an nn.Model holding random weights (N(0, 0.3); norms 1 + N(0, 0.1)),
// and ref's values: those weights and a batch of 2 sequences of 8 tokens with their targets.
func trainSetup(t *testing.T, cfg model.Config) (lg, gg *graph.Graph, m *nn.Model, vals map[string]*ref.Tensor) {
	t.Helper()
	g, err := model.BuildGraph(&cfg, nil, cfg.RopeScaling != nil)
	if err != nil {
		t.Fatal(err)
	}
	lg, loss, err := graph.WithLoss(g, model.OutputLogits, "targets")
	if err != nil {
		t.Fatal(err)
	}
	var wrt []*graph.Value
	for _, w := range lg.Weights {
		if w.Name != model.RopeFreqsName {
			wrt = append(wrt, w)
		}
	}
	if gg, err = graph.Grad(lg, loss, wrt); err != nil {
		t.Fatal(err)
	}
	if m, err = nn.New(cfg, trainB, trainT, kernels.Serial); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(7))
	vals = map[string]*ref.Tensor{}
	randomParams(r, m, vals)
	if cfg.RopeScaling != nil {
		f, err := kernels.Llama3Factors(cfg.HeadDim, cfg.RopeTheta, *cfg.RopeScaling)
		if err != nil {
			t.Fatal(err)
		}
		vals[model.RopeFreqsName] = ref.FromF32([]int{len(f)}, f)
	}
	randomBatch(r, cfg.Vocab, vals)
	return lg, gg, m, vals
}

func TestLlamaGradMatchesFiniteDifferences(t *testing.T) {
	for name, cfg := range llamaConfigs() {
		t.Run(name, func(t *testing.T) {
			lg, gg, _, vals := trainSetup(t, cfg)
			wrt := make([]*graph.Value, len(gg.Outputs)-1)
			for i := range wrt {
				wrt[i] = lg.Value(strings.TrimPrefix(gg.Outputs[i+1].Name, "d."))
				if wrt[i] == nil {
					t.Fatalf("gradient output %s does not name its weight", gg.Outputs[i+1])
				}
			}
			pick := fdPick(rand.New(rand.NewSource(1)), 3)
			worst := checkFD(t, lg, wrt, vals, 1e-5, pick)
			t.Logf("%s: %d weights, 4 entries each: worst relative difference from finite differences %.2g", name, len(wrt), worst)
		})
	}
}

func TestLlamaGradMatchesTrainNN(t *testing.T) {
	for name, cfg := range llamaConfigs() {
		t.Run(name, func(t *testing.T) {
			_, gg, m, vals := trainSetup(t, cfg)
			res, err := ref.Run(gg, vals)
			if err != nil {
				t.Fatal(err)
			}
			m.ZeroGrad()
			loss := m.Forward(vals[model.InputTokens].I, vals["targets"].I, trainB, trainT)
			m.Backward()
			lossRel := math.Abs(float64(loss)-res[0].F[0]) / math.Abs(res[0].F[0])
			if lossRel > 1e-5 {
				t.Errorf("loss: nn %v, graph %v (relative %.2g)", loss, res[0].F[0], lossRel)
			}
			worst := compareNNGrads(t, gg, res, m)
			t.Logf("%s: loss %.6f (nn %.6f, relative %.2g); %d gradients, worst relative difference %.2g",
				name, res[0].F[0], loss, lossRel, len(m.Params()), worst)
		})
	}
}

// The compiler's passes (DCE, the add + rms_norm fusion) change no gradient: the fused loss
// graph's backward graph (add_rms_norm's rule instead of add's and rms_norm's) gives the same
// numbers.
func TestLlamaGradAfterFusion(t *testing.T) {
	cfg := llamaConfigs()["untied"]
	lg, gg, _, vals := trainSetup(t, cfg)
	fused, _, err := graph.RunPasses(lg, graph.CompilerPasses...)
	if err != nil {
		t.Fatal(err)
	}
	if fused.OpCounts()["add_rms_norm"] == 0 {
		t.Fatal("nothing fused")
	}
	var wrt []*graph.Value
	for _, o := range gg.Outputs[1:] {
		wrt = append(wrt, fused.Value(strings.TrimPrefix(o.Name, "d.")))
	}
	fg, err := graph.Grad(fused, fused.Outputs[0], wrt)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(gg, vals)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ref.Run(fg, vals)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		for j, v := range want[i].F {
			if d := math.Abs(got[i].F[j] - v); d > 1e-12*math.Max(1, math.Abs(v)) {
				t.Fatalf("output %s[%d]: fused %v, unfused %v", gg.Outputs[i], j, got[i].F[j], v)
			}
		}
	}
}

// randomParams gives m's parameters random values (norms near 1, the rest N(0, 0.3²)) and
// binds them in vals under their names.
func randomParams(r *rand.Rand, m *nn.Model, vals map[string]*ref.Tensor) {
	for _, p := range m.Params() {
		for i := range p.W {
			if strings.Contains(p.Name, "norm") {
				p.W[i] = float32(1 + 0.1*r.NormFloat64())
			} else {
				p.W[i] = float32(0.3 * r.NormFloat64())
			}
		}
		vals[p.Name] = ref.FromF32(p.Shape, p.W)
	}
}

// randomBatch binds trainB sequences of trainT random tokens, their positions, every row as
// a logit row, and random targets.
func randomBatch(r *rand.Rand, vocab int, vals map[string]*ref.Tensor) {
	n := trainB * trainT
	toks, targets, pos, rows := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	for i := range toks {
		toks[i], targets[i] = int32(r.Intn(vocab)), int32(r.Intn(vocab))
		pos[i], rows[i] = int32(i%trainT), int32(i)
	}
	vals[model.InputTokens] = ref.Ints([]int{n}, toks)
	vals[model.InputPositions] = ref.Ints([]int{n}, pos)
	vals[model.InputLogitRows] = ref.Ints([]int{n}, rows)
	vals["targets"] = ref.Ints([]int{n}, targets)
}

// fdPick picks, per tensor, the entry of largest gradient and extra random ones for checkFD.
func fdPick(r *rand.Rand, extra int) func(string, []float64) []int {
	return func(_ string, grad []float64) []int {
		best := 0
		for i, v := range grad {
			if math.Abs(v) > math.Abs(grad[best]) {
				best = i
			}
		}
		out := []int{best}
		for range extra {
			out = append(out, r.Intn(len(grad)))
		}
		return out
	}
}

// compareNNGrads checks train/nn's gradients in m against the graph's (res: gg run by Run,
// the loss then one "d.<weight>" output per weight), within 1e-4 relative per tensor, and
// returns the worst relative difference.
func compareNNGrads(t *testing.T, gg *graph.Graph, res []*ref.Tensor, m *nn.Model) float64 {
	t.Helper()
	grads := map[string][]float64{}
	for i, o := range gg.Outputs[1:] {
		grads[strings.TrimPrefix(o.Name, "d.")] = res[i+1].F
	}
	worst := 0.0
	for _, p := range m.Params() {
		want := grads[p.Name]
		if len(want) != len(p.G) {
			t.Fatalf("%s: graph gradient of %d values, nn %d", p.Name, len(want), len(p.G))
		}
		var maxAbs, maxDiff float64
		for i, v := range p.G {
			maxAbs = math.Max(maxAbs, math.Abs(want[i]))
			maxDiff = math.Max(maxDiff, math.Abs(float64(v)-want[i]))
		}
		rel := maxDiff / maxAbs
		worst = math.Max(worst, rel)
		if rel > 1e-4 || maxAbs == 0 {
			t.Errorf("d loss/d %s: nn differs from the graph by %.3g (max |grad| %.3g, relative %.3g)", p.Name, maxDiff, maxAbs, rel)
		}
	}
	return worst
}
