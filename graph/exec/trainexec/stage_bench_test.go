// This file reports the activation memory the executor plans for a step at the stories110M
// shape with and without recomputation, and per slot with two slots (one run compiles the
// programs; weights and gradients are one shared buffer each, their values unused). Run:
// go test ./graph/exec/trainexec -run X -bench Activations -benchtime 1x
package trainexec_test

import (
	"testing"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/model"
)

func BenchmarkActivationsStories110M(b *testing.B) {
	cfg := model.Config{Arch: "llama", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, HeadDim: 64, FFN: 2048,
		Vocab: 32000, CtxLen: 1024, RopeTheta: 10000, NormEps: 1e-5}
	const B, T = 4, 256
	w, g := make([]float32, cfg.Vocab*cfg.Dim), make([]float32, cfg.Vocab*cfg.Dim)
	var params []trainexec.Param
	for name, shape := range cfg.Shapes() {
		n := 1
		for _, d := range shape {
			n *= d
		}
		params = append(params, trainexec.Param{Name: name, W: w[:n], G: g[:n]})
	}
	for b.Loop() {
		for _, c := range []struct {
			name  string
			opt   trainexec.Options
			slots int
		}{{"plain", trainexec.Options{}, 1}, {"recompute", trainexec.Options{Recompute: true}, 1},
			{"plain-2slots", trainexec.Options{}, 2}, {"recompute-2slots", trainexec.Options{Recompute: true}, 2}} {
			ps, err := trainexec.ForModelSlots(cfg, params, B, T, nil, c.opt, c.slots)
			if err != nil {
				b.Fatal(err)
			}
			total := ps[0].SharedBytes()
			for _, p := range ps {
				total += p.ActivationBytes()
			}
			b.ReportMetric(float64(total)/(1<<20), c.name+"-MiB")
		}
	}
}
