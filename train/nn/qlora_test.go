// QLoRA-style adapters: the base's matrices bound in their stored type (Adapter.Quant) give
// the loss and adapter gradients of the same base dequantized to F32, and the adapter
// gradients equal finite differences.
package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/nn"
)

// qloraCfg has every matrix's input a multiple of 256 (Q4_K's block).
var qloraCfg = model.Config{Arch: "llama", Dim: 256, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 64,
	FFN: 256, Vocab: 24, CtxLen: 16, RopeTheta: 10000, NormEps: 1e-5, Tied: true}

// quantBase returns a random base's matrices quantized to dt, the same base dequantized to F32
// (norms included), and the norms alone.
func quantBase(t testing.TB, cfg model.Config, dt tensor.DType) (q map[string]*tensor.Tensor, deq, norms map[string][]float32) {
	t.Helper()
	base, err := nn.New(cfg, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	base.Init(3)
	q, deq, norms = map[string]*tensor.Tensor{}, map[string][]float32{}, map[string][]float32{}
	for _, p := range base.Params() {
		if len(p.Shape) != 2 {
			norms[p.Name], deq[p.Name] = p.W, p.W
			continue
		}
		n, k := p.Shape[0], p.Shape[1]
		rb, err := dt.RowBytes(k)
		if err != nil {
			t.Fatal(err)
		}
		w := &tensor.Tensor{Name: p.Name, Type: dt, Shape: []int{n, k}, Data: make([]byte, n*rb)}
		d := make([]float32, n*k)
		for o := 0; o < n; o++ {
			if err := tensor.QuantizeRow(dt, p.W[o*k:(o+1)*k], w.Data[o*rb:(o+1)*rb]); err != nil {
				t.Fatal(err)
			}
			if err := tensor.DequantizeRow(dt, w.Data[o*rb:(o+1)*rb], d[o*k:(o+1)*k]); err != nil {
				t.Fatal(err)
			}
		}
		q[p.Name], deq[p.Name] = w, d
	}
	return q, deq, norms
}

// adapterOn builds the adapted model over a, with every A and B drawn at random (seed 9).
func adapterOn(t *testing.T, a *nn.Adapter) *nn.Model {
	t.Helper()
	m, err := nn.NewWith(qloraCfg, 2, 8, nil, nn.Options{Adapter: a})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, p := range m.Params() {
		for i := range p.W {
			p.W[i] = float32(r.NormFloat64() * 0.05)
		}
	}
	return m
}

func TestQLoRAMatchesDequantizedBase(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_K} {
		t.Run(dt.String(), func(t *testing.T) {
			q, deq, norms := quantBase(t, qloraCfg, dt)
			mk := func(quant bool) *nn.Model {
				a := &nn.Adapter{Targets: nn.AdapterTargets, Rank: 4, Alpha: 8, Base: deq}
				if quant {
					a.Base, a.Quant = norms, q
				}
				return adapterOn(t, a)
			}
			fm, qm := mk(false), mk(true)
			step := func(m *nn.Model) float32 {
				m.ZeroGrad()
				l := m.Forward(adaptTokens, adaptTargets, 2, 8)
				m.Backward()
				return l
			}
			// The exact kernels: the quantized path is the dequantized base's math.
			func() {
				defer func(r bool) { kernels.Reference = r }(kernels.Reference)
				kernels.Reference = true
				lf, lq := step(fm), step(qm)
				if math.Abs(float64(lf-lq)) > 1e-5*math.Abs(float64(lf)) {
					t.Fatalf("loss: quantized base %g, dequantized %g", lq, lf)
				}
				var maxd, maxv float64
				for i, p := range qm.Params() {
					for j, g := range p.G {
						maxd = max(maxd, math.Abs(float64(g-fm.Params()[i].G[j])))
						maxv = max(maxv, math.Abs(float64(g)))
					}
				}
				if maxv == 0 || maxd > 1e-4*maxv {
					t.Fatalf("adapter gradients: max |diff| %g of %g", maxd, maxv)
				}
				t.Logf("reference kernels: loss %.6f vs %.6f, gradients max |diff| %.3g of %.3g", lq, lf, maxd, maxv)

				// Finite differences of the loss over the quantized base.
				r := rand.New(rand.NewPCG(1, 2))
				const h = 1e-2
				for _, p := range qm.Params() {
					i := r.IntN(len(p.W))
					w0 := p.W[i]
					p.W[i] = w0 + h
					lp := float64(qm.Forward(adaptTokens, adaptTargets, 2, 8))
					p.W[i] = w0 - h
					lm := float64(qm.Forward(adaptTokens, adaptTargets, 2, 8))
					p.W[i] = w0
					fd := (lp - lm) / (2 * h)
					if d := math.Abs(fd - float64(p.G[i])); d > 2e-4+0.03*math.Abs(fd) {
						t.Errorf("%s[%d]: gradient %g, finite differences %g", p.Name, i, p.G[i], fd)
					}
				}
			}()
			// The fast kernels quantize the activations (as serving does): close, not equal.
			lf, lq := step(fm), step(qm)
			if math.Abs(float64(lf-lq)) > 0.01*math.Abs(float64(lf)) {
				t.Fatalf("fast kernels: loss over the quantized base %g, dequantized %g", lq, lf)
			}
			t.Logf("fast kernels: loss %.6f vs %.6f", lq, lf)
		})
	}
}

func TestQLoRARefusesMisshapenBase(t *testing.T) {
	q, _, norms := quantBase(t, qloraCfg, tensor.Q8_0)
	w := q["blk.0.attn_q.weight"]
	q["blk.0.attn_q.weight"] = &tensor.Tensor{Name: w.Name, Type: w.Type, Shape: []int{w.Shape[1], w.Shape[0] / 2}, Data: w.Data[:len(w.Data)/2]}
	a := &nn.Adapter{Targets: []string{"attn_q"}, Rank: 2, Alpha: 4, Base: norms, Quant: q}
	if _, err := nn.NewWith(qloraCfg, 1, 4, nil, nn.Options{Adapter: a}); err == nil {
		t.Fatal("a quantized base tensor of the wrong shape was accepted")
	}
}
