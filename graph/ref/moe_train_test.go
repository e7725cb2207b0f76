// Tests of the mixture-of-experts network's training graph: model.BuildGraph's Mixtral-style
// (llama with experts, renormalised top-2) and Qwen2-MoE-style (unnormalised, shared expert
// with its gate) graphs with the mean cross-entropy and the routers' load-balancing loss
// (graph.WithMoEAux), differentiated by graph.Grad and run by ref, equal central finite
// differences of the loss on a sample of weight entries, and train/nn's backward (the same
// graph compiled by graph/exec/trainexec, float32, its moe kernels) within 1e-4 relative.
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

const moeAuxCoef = 0.25

func moeConfigs() map[string]model.Config {
	mixtral := model.Config{Arch: "llama", Dim: 16, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 4, FFN: 32,
		Vocab: 24, CtxLen: trainT, RopeTheta: 10000, NormEps: 1e-5, Experts: 4, ExpertsUsed: 2, ExpertsNorm: true, ExpertFFN: 12}
	qwen := mixtral
	qwen.Arch, qwen.ExpertsNorm, qwen.SharedFFN, qwen.Tied, qwen.ExpertsUsed = "qwen2moe", false, 20, true, 3
	qwen.QKVBias, qwen.RopeNeoX = true, true
	return map[string]model.Config{"mixtral": mixtral, "qwen2moe": qwen}
}

// moeSetup is trainSetup with the load-balancing loss.
func moeSetup(t *testing.T, cfg model.Config) (lg, gg *graph.Graph, m *nn.Model, vals map[string]*ref.Tensor) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := model.BuildGraph(&cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	ce, _, err := graph.WithLoss(g, model.OutputLogits, "targets")
	if err != nil {
		t.Fatal(err)
	}
	if lg, err = graph.WithMoEAux(ce, moeAuxCoef); err != nil {
		t.Fatal(err)
	}
	if n := lg.OpCounts()["moe_aux"]; n != cfg.Layers {
		t.Fatalf("%d moe_aux nodes, want %d", n, cfg.Layers)
	}
	if gg, err = graph.Grad(lg, lg.Outputs[0], lg.Weights); err != nil {
		t.Fatal(err)
	}
	if m, err = nn.NewWith(cfg, trainB, trainT, kernels.Serial, nn.Options{MoEAuxCoef: moeAuxCoef}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(7))
	vals = map[string]*ref.Tensor{}
	randomParams(r, m, vals)
	randomBatch(r, cfg.Vocab, vals)
	return lg, gg, m, vals
}

func TestMoEGradMatchesFiniteDifferences(t *testing.T) {
	for name, cfg := range moeConfigs() {
		t.Run(name, func(t *testing.T) {
			lg, gg, _, vals := moeSetup(t, cfg)
			wrt := make([]*graph.Value, len(gg.Outputs)-1)
			for i := range wrt {
				wrt[i] = lg.Value(strings.TrimPrefix(gg.Outputs[i+1].Name, "d."))
			}
			pick := fdPick(rand.New(rand.NewSource(1)), 2)
			worst := checkFD(t, lg, wrt, vals, 1e-5, pick)
			t.Logf("%s: %d weights: worst relative difference from finite differences %.2g", name, len(wrt), worst)
		})
	}
}

func TestMoEGradMatchesTrainNN(t *testing.T) {
	for name, cfg := range moeConfigs() {
		t.Run(name, func(t *testing.T) {
			lg, gg, m, vals := moeSetup(t, cfg)
			res, err := ref.Run(gg, vals)
			if err != nil {
				t.Fatal(err)
			}
			all, err := ref.RunAll(lg, vals)
			if err != nil {
				t.Fatal(err)
			}
			var aux float64 // the unweighted mean over the layers
			for v, tv := range all {
				if strings.HasPrefix(v.Name, "moe_aux.") {
					aux += tv.F[0] / (moeAuxCoef / float64(cfg.Layers)) / float64(cfg.Layers)
				}
			}
			m.ZeroGrad()
			loss := m.Forward(vals[model.InputTokens].I, vals["targets"].I, trainB, trainT)
			m.Backward()
			total := float64(loss) + moeAuxCoef*float64(m.AuxLoss())
			if rel := math.Abs(total-res[0].F[0]) / math.Abs(res[0].F[0]); rel > 1e-5 {
				t.Errorf("loss: nn %v (cross-entropy %v, aux %v), graph %v (relative %.2g)", total, loss, m.AuxLoss(), res[0].F[0], rel)
			}
			if math.Abs(float64(m.AuxLoss())-aux) > 1e-5*aux || aux < 1 {
				t.Errorf("aux loss: nn %v, graph %v", m.AuxLoss(), aux)
			}
			worst := compareNNGrads(t, gg, res, m)
			t.Logf("%s: loss %.6f (nn %.6f + %g x aux %.4f); %d gradients, worst relative difference %.2g",
				name, res[0].F[0], loss, moeAuxCoef, m.AuxLoss(), len(m.Params()), worst)
		})
	}
}
