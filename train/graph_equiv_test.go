// Tests that training through the graph (graph/exec/trainexec: model.BuildGraph with its loss
// and backward) is the training train/nn's hand-written layers did: 20 AdamW steps with
// gradient accumulation over two micro-batches, from the same initialisation and data, give
// the losses of every step (1e-6 relative) and the final weights (their norm and a random
// projection, 1e-6 relative to the norm) that those layers gave at main be94aba, recorded in
// testdata/graph_train.golden (the layers are gone: the file cannot be regenerated).
package train

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

const graphTrainGolden = "testdata/graph_train.golden"

func graphTrainConfigs() map[string]model.Config {
	return map[string]model.Config{
		"gqa-tied": {Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 160,
			Vocab: 96, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5, Tied: true},
		"mha-untied-llama3rope": {Arch: "mistral", Dim: 48, Layers: 3, Heads: 3, KVHeads: 3, HeadDim: 16, FFN: 96,
			Vocab: 70, CtxLen: 64, RopeTheta: 500000, NormEps: 1e-6,
			RopeScaling: &kernels.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 16}},
	}
}

// checksum is x's L2 norm and its dot product with a fixed pseudo-random N(0,1) vector.
func checksum(x []float32) (norm, proj float64) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, v := range x {
		norm += float64(v) * float64(v)
		proj += float64(v) * r.NormFloat64()
	}
	return math.Sqrt(norm), proj
}

func TestTrainGraphMatchesNN(t *testing.T) {
	golden := readGraphTrainGolden(t)
	for name, cfg := range graphTrainConfigs() {
		t.Run(name, func(t *testing.T) {
			const B, T, steps, accum = 2, 40, 20, 2
			pool := kernels.NewPool(2)
			host, err := nn.New(cfg, B, T, pool) // holds the graph's weights and gradients
			if err != nil {
				t.Fatal(err)
			}
			host.Init(11)
			var params []trainexec.Param
			for _, p := range host.Params() {
				params = append(params, trainexec.Param{Name: p.Name, W: p.W, G: p.G})
			}
			prog, err := trainexec.ForModel(cfg, params, B, T, pool)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := host.Flat()
			opt := NewAdamW(len(w), paramSpans(host), pool)
			h := Hyper{LR: 3e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradScale: 1.0 / accum, Clip: 1}
			r := rand.New(rand.NewPCG(5, 6))
			want := golden[name]
			if len(want) != steps+2 {
				t.Fatalf("%s: %d values for %s, want %d losses and the weights' norm and projection", graphTrainGolden, len(want), name, steps)
			}
			for step := 0; step < steps; step++ {
				host.ZeroGrad()
				var l float32
				for a := 0; a < accum; a++ {
					tok, tgt := make([]int32, B*T), make([]int32, B*T)
					for i := range tok { // a learnable sequence: next = (3·cur + 1) mod V, with noise
						tok[i] = int32(r.IntN(cfg.Vocab))
						tgt[i] = (3*tok[i] + 1) % int32(cfg.Vocab)
						if r.IntN(8) == 0 {
							tgt[i] = int32(r.IntN(cfg.Vocab))
						}
					}
					l += prog.Forward(tok, tgt, B, T)
					prog.Backward()
				}
				if rel := math.Abs(float64(l/accum)-want[step]) / want[step]; rel > 1e-6 {
					t.Errorf("step %d: loss %v through the graph, %v through the hand-written layers (relative %.2g)", step, l/accum, want[step], rel)
				}
				if step == 0 || step == steps-1 {
					t.Logf("step %d: loss %.6f (graph) %.6f (hand-written)", step, l/accum, want[step])
				}
				w, g := host.Flat()
				opt.Step(w, g, h)
			}
			norm, proj := checksum(w)
			if wn, wp := want[steps], want[steps+1]; math.Abs(norm-wn) > 1e-6*wn || math.Abs(proj-wp) > 1e-6*wn {
				t.Errorf("weights after %d steps: norm %v, projection %v; the hand-written layers' %v, %v", steps, norm, proj, wn, wp)
			}
		})
	}
}

// readGraphTrainGolden reads "<case> loss <step> <float32 bits>" and "<case> weights <norm>
// <projection>" lines: per case the losses by step, then the norm and the projection.
func readGraphTrainGolden(t *testing.T) map[string][]float64 {
	t.Helper()
	f, err := os.Open(graphTrainGolden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var name, kind string
		var a, b float64
		var step int
		var bits uint32
		switch {
		case strings.Contains(line, " loss "):
			if _, err := fmt.Sscanf(line, "%s loss %d %x", &name, &step, &bits); err != nil || step != len(out[name]) {
				t.Fatalf("%s: bad line %q", graphTrainGolden, line)
			}
			out[name] = append(out[name], float64(math.Float32frombits(bits)))
		default:
			if _, err := fmt.Sscanf(line, "%s %s %g %g", &name, &kind, &a, &b); err != nil || kind != "weights" {
				t.Fatalf("%s: bad line %q", graphTrainGolden, line)
			}
			out[name] = append(out[name], a, b)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
