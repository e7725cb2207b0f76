// Low-rank adapters: gradients of A and B equal finite differences of the loss, the base
// gets no gradient, B = 0 gives the base model, and base + adapter gives the logits of the
// merged weights W + (alpha/r)·B·A.
package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

var adaptCfg = model.Config{Arch: "llama", Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8,
	FFN: 48, Vocab: 24, CtxLen: 16, RopeTheta: 10000, NormEps: 1e-5, Tied: true}

// adapted returns a random base, the adapted model over it (A and B random when randomB) and
// the plain model holding the base.
func adapted(t *testing.T, randomB bool, targets ...string) (base *nn.Model, ad *nn.Model, a *nn.Adapter) {
	t.Helper()
	base, err := nn.New(adaptCfg, 2, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	base.Init(3)
	ws := map[string][]float32{}
	for _, p := range base.Params() {
		ws[p.Name] = p.W
	}
	a = &nn.Adapter{Targets: targets, Rank: 4, Alpha: 8, Base: ws}
	ad, err = nn.NewWith(adaptCfg, 2, 8, nil, nn.Options{Adapter: a})
	if err != nil {
		t.Fatal(err)
	}
	ad.Init(5)
	if randomB {
		r := rand.New(rand.NewPCG(9, 9))
		for _, p := range ad.Params() {
			for i := range p.W {
				p.W[i] = float32(r.NormFloat64() * 0.2)
			}
		}
	}
	return base, ad, a
}

var adaptTokens, adaptTargets = []int32{1, 5, 7, 3, 9, 2, 11, 4, 6, 8, 10, 12, 14, 16, 18, 20},
	[]int32{5, 7, 3, 9, 2, 11, 4, -1, 8, 10, -1, 14, 16, 18, 20, 22}

func TestAdapterGradFiniteDifferences(t *testing.T) {
	_, ad, _ := adapted(t, true, nn.AdapterTargets...)
	if n := len(ad.Params()); n != 2*len(nn.AdapterTargets)*adaptCfg.Layers {
		t.Fatalf("%d adapter tensors", n)
	}
	ad.ZeroGrad()
	ad.Forward(adaptTokens, adaptTargets, 2, 8)
	ad.Backward()
	r := rand.New(rand.NewPCG(1, 2))
	const h = 1e-2
	checked := 0
	for _, p := range ad.Params() {
		for range 3 {
			i := r.IntN(len(p.W))
			w0 := p.W[i]
			p.W[i] = w0 + h
			lp := float64(ad.Forward(adaptTokens, adaptTargets, 2, 8))
			p.W[i] = w0 - h
			lm := float64(ad.Forward(adaptTokens, adaptTargets, 2, 8))
			p.W[i] = w0
			fd := (lp - lm) / (2 * h)
			if d := math.Abs(fd - float64(p.G[i])); d > 2e-4+0.03*math.Abs(fd) {
				t.Errorf("%s[%d]: gradient %g, finite differences %g", p.Name, i, p.G[i], fd)
			}
			checked++
		}
	}
	t.Logf("%d adapter entries checked", checked)
}

func TestAdapterZeroBIsBaseAndMergedLogits(t *testing.T) {
	base, ad, a := adapted(t, false, "attn_q", "attn_v", "ffn_down")
	lb := base.Forward(adaptTokens, adaptTargets, 2, 8)
	la := ad.Forward(adaptTokens, adaptTargets, 2, 8)
	if lb != la {
		t.Fatalf("B = 0: adapted loss %g, base %g", la, lb)
	}
	// random B, then the merged model
	r := rand.New(rand.NewPCG(4, 4))
	ps := map[string][]float32{}
	for _, p := range ad.Params() {
		for i := range p.W {
			p.W[i] = float32(r.NormFloat64() * 0.3)
		}
		ps[p.Name] = p.W
	}
	ad.Forward(adaptTokens, nil, 2, 8)
	want := append([]float32(nil), ad.Logits()...)
	merged, err := nn.New(adaptCfg, 2, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	shapes := adaptCfg.Shapes()
	for _, p := range merged.Params() {
		copy(p.W, a.Base[p.Name])
		an, bn := nn.AdapterNames(p.Name)
		A, B := ps[an], ps[bn]
		if A == nil {
			continue
		}
		out, in := shapes[p.Name][0], shapes[p.Name][1]
		for o := range out {
			for i := range in {
				var s float64
				for k := range a.Rank {
					s += float64(B[o*a.Rank+k]) * float64(A[k*in+i])
				}
				p.W[o*in+i] += float32(a.Scale() * s)
			}
		}
	}
	merged.Forward(adaptTokens, nil, 2, 8)
	var maxd, maxv float64
	for i, v := range merged.Logits() {
		maxd = max(maxd, math.Abs(float64(v-want[i])))
		maxv = max(maxv, math.Abs(float64(want[i])))
	}
	if maxd > 1e-5*maxv {
		t.Fatalf("merged logits differ by %g (largest %g)", maxd, maxv)
	}
	t.Logf("merged vs adapter logits: max |diff| %.3g of %.3g", maxd, maxv)
}

func TestAdapterRefusals(t *testing.T) {
	base, err := nn.New(adaptCfg, 1, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws := map[string][]float32{}
	for _, p := range base.Params() {
		ws[p.Name] = p.W
	}
	for name, a := range map[string]*nn.Adapter{
		"rank 0":     {Targets: []string{"attn_q"}, Rank: 0, Alpha: 1, Base: ws},
		"bad target": {Targets: []string{"q_proj"}, Rank: 2, Alpha: 1, Base: ws},
		"no base":    {Targets: []string{"attn_q"}, Rank: 2, Alpha: 1},
	} {
		if _, err := nn.NewWith(adaptCfg, 1, 4, nil, nn.Options{Adapter: a}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
