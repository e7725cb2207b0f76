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
	n := trainB * trainT
	toks, targets, pos, rows := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	for i := range toks {
		toks[i], targets[i] = int32(r.Intn(cfg.Vocab)), int32(r.Intn(cfg.Vocab))
		pos[i], rows[i] = int32(i%trainT), int32(i)
	}
	vals[model.InputTokens] = ref.Ints([]int{n}, toks)
	vals[model.InputPositions] = ref.Ints([]int{n}, pos)
	vals[model.InputLogitRows] = ref.Ints([]int{n}, rows)
	vals["targets"] = ref.Ints([]int{n}, targets)
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
			r := rand.New(rand.NewSource(1))
			pick := func(_ string, grad []float64) []int {
				best := 0
				for i, v := range grad {
					if math.Abs(v) > math.Abs(grad[best]) {
						best = i
					}
				}
				return []int{best, r.Intn(len(grad)), r.Intn(len(grad))}
			}
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
			t.Logf("%s: loss %.6f (nn %.6f + %g x aux %.4f); %d gradients, worst relative difference %.2g",
				name, res[0].F[0], loss, moeAuxCoef, m.AuxLoss(), len(m.Params()), worst)
		})
	}
}
