// Tests that training through the graph (graph/exec/trainexec: model.BuildGraph with its loss
// and backward) is training through train/nn: 20 AdamW steps with gradient accumulation over
// two micro-batches, from the same initialisation and data, give the same loss at every step
// (1e-6 relative; in fact bit for bit) and the same weights at the end.
package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

func TestTrainGraphMatchesNN(t *testing.T) {
	cfgs := map[string]model.Config{
		"gqa-tied": {Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 160,
			Vocab: 96, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5, Tied: true},
		"mha-untied-llama3rope": {Arch: "mistral", Dim: 48, Layers: 3, Heads: 3, KVHeads: 3, HeadDim: 16, FFN: 96,
			Vocab: 70, CtxLen: 64, RopeTheta: 500000, NormEps: 1e-6,
			RopeScaling: &kernels.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 16}},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			const B, T, steps, accum = 2, 40, 20, 2
			pool := kernels.NewPool(2)
			ref, err := nn.New(cfg, B, T, pool)
			if err != nil {
				t.Fatal(err)
			}
			host, err := nn.New(cfg, B, T, pool) // holds the graph's weights and gradients
			if err != nil {
				t.Fatal(err)
			}
			ref.Init(11)
			host.Init(11)
			var params []trainexec.Param
			for _, p := range host.Params() {
				params = append(params, trainexec.Param{Name: p.Name, W: p.W, G: p.G})
			}
			prog, err := trainexec.ForModel(cfg, params, B, T, pool)
			if err != nil {
				t.Fatal(err)
			}
			nw, _ := ref.Flat()
			optRef := NewAdamW(len(nw), paramSpans(ref), pool)
			optG := NewAdamW(len(nw), paramSpans(host), pool)
			h := Hyper{LR: 3e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradScale: 1.0 / accum, Clip: 1}
			r := rand.New(rand.NewPCG(5, 6))
			for step := 0; step < steps; step++ {
				ref.ZeroGrad()
				host.ZeroGrad()
				var lRef, lG float32
				for a := 0; a < accum; a++ {
					tok, tgt := make([]int32, B*T), make([]int32, B*T)
					for i := range tok { // a learnable sequence: next = (3·cur + 1) mod V, with noise
						tok[i] = int32(r.IntN(cfg.Vocab))
						tgt[i] = (3*tok[i] + 1) % int32(cfg.Vocab)
						if r.IntN(8) == 0 {
							tgt[i] = int32(r.IntN(cfg.Vocab))
						}
					}
					lRef += ref.Forward(tok, tgt, B, T)
					ref.Backward()
					lG += prog.Forward(tok, tgt, B, T)
					prog.Backward()
				}
				if rel := math.Abs(float64(lG-lRef)) / math.Abs(float64(lRef)); rel > 1e-6 {
					t.Errorf("step %d: loss %v through the graph, %v through nn (relative %.2g)", step, lG/accum, lRef/accum, rel)
				}
				if step == 0 || step == steps-1 {
					t.Logf("step %d: loss %.6f (graph) %.6f (nn)", step, lG/accum, lRef/accum)
				}
				w, g := ref.Flat()
				optRef.Step(w, g, h)
				w, g = host.Flat()
				optG.Step(w, g, h)
			}
			rw, _ := ref.Flat()
			gw, _ := host.Flat()
			var maxd float64
			for i := range rw {
				maxd = max(maxd, math.Abs(float64(rw[i]-gw[i])))
			}
			if maxd > 1e-6 {
				t.Errorf("weights after %d steps differ by up to %g", steps, maxd)
			}
		})
	}
}
