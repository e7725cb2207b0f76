// Tests of the training graphs of Gemma 2, Gemma 3 and Phi-3: model.BuildGraph's graph with the
// mean cross-entropy, differentiated by graph.Grad and run by ref, equals central finite
// differences of the loss on a sample of weight entries, and train/nn's backward (the same
// graph compiled by graph/exec/trainexec, float32: the windowed, soft-capped and scaled
// training attention, gelu/geglu, softcap, scale, split and concat kernels, rope_grad with
// LongRoPE's divisors and mscale) within 1e-4 relative. Every window binds (3 of 8 positions).
package ref_test

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

func familyConfigs() map[string]model.Config {
	base := model.Config{Dim: 16, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 4, FFN: 32,
		Vocab: 24, CtxLen: trainT, RopeTheta: 10000, NormEps: 1e-6, SlidingWindow: 3}
	gemma2, gemma3, phi3 := base, base, base
	gemma2.Arch, gemma2.AttnSoftcap, gemma2.FinalSoftcap, gemma2.AttnScalar = "gemma2", 1.5, 2, 3
	gemma3.Arch, gemma3.SlidingPattern, gemma3.RopeLinear, gemma3.HeadDim = "gemma3", 2, 2, 6
	phi3.Arch, phi3.NormEps = "phi3", 1e-5
	phi3.LongRope = &model.LongRope{OrigCtx: 4, AttnFactor: 1.19, Long: []float32{1.5, 3}, Short: []float32{1, 1.25}}
	cs := map[string]model.Config{"gemma2": gemma2, "gemma3": gemma3, "phi3": phi3}
	for name, c := range cs {
		model.FamilyOf(c.Arch).Fix(&c)
		cs[name] = c
	}
	return cs
}

// familySetup is trainSetup for a family: the tensors the configuration determines (Phi-3's
// LongRoPE divisors) are constants, bound as trainexec binds them.
func familySetup(t *testing.T, cfg model.Config) (lg, gg *graph.Graph, m *nn.Model, vals map[string]*ref.Tensor) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := model.BuildGraph(&cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	lg, loss, err := graph.WithLoss(g, model.OutputLogits, "targets")
	if err != nil {
		t.Fatal(err)
	}
	consts, err := trainexec.ConfigParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	isConst := map[string]bool{}
	vals = map[string]*ref.Tensor{}
	for _, c := range consts {
		isConst[c.Name] = true
		vals[c.Name] = ref.FromF32([]int{len(c.W)}, c.W)
	}
	var wrt []*graph.Value
	for _, w := range lg.Weights {
		if !isConst[w.Name] {
			wrt = append(wrt, w)
		}
	}
	if cfg.LongRope != nil && len(wrt) == len(lg.Weights) {
		t.Fatal("no LongRoPE divisors in the graph")
	}
	if gg, err = graph.Grad(lg, loss, wrt); err != nil {
		t.Fatal(err)
	}
	if m, err = nn.New(cfg, trainB, trainT, kernels.Serial); err != nil {
		t.Fatal(err)
	}
	if len(m.Params()) != len(wrt) {
		t.Fatalf("nn trains %d tensors, the graph has %d to train", len(m.Params()), len(wrt))
	}
	r := rand.New(rand.NewSource(7))
	randomParams(r, m, vals)
	randomBatch(r, cfg.Vocab, vals)
	return lg, gg, m, vals
}

func TestFamilyGradMatchesFiniteDifferences(t *testing.T) {
	for name, cfg := range familyConfigs() {
		t.Run(name, func(t *testing.T) {
			lg, gg, _, vals := familySetup(t, cfg)
			wrt := make([]*graph.Value, len(gg.Outputs)-1)
			for i := range wrt {
				wrt[i] = lg.Value(strings.TrimPrefix(gg.Outputs[i+1].Name, "d."))
				if wrt[i] == nil {
					t.Fatalf("gradient output %s does not name its weight", gg.Outputs[i+1])
				}
			}
			pick := fdPick(rand.New(rand.NewSource(1)), 2)
			worst := checkFD(t, lg, wrt, vals, 1e-5, pick)
			t.Logf("%s: %d weights: worst relative difference from finite differences %.2g", name, len(wrt), worst)
		})
	}
}

func TestFamilyGradMatchesTrainNN(t *testing.T) {
	for name, cfg := range familyConfigs() {
		t.Run(name, func(t *testing.T) {
			_, gg, m, vals := familySetup(t, cfg)
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
