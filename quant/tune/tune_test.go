package tune

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/nn"
)

func quantized(t *testing.T, dt tensor.DType, w []float32) *Quantized {
	t.Helper()
	n, err := dt.RowBytes(len(w))
	if err != nil {
		t.Fatal(err)
	}
	q := &Quantized{Type: dt, Data: make([]byte, n)}
	if err := tensor.QuantizeRow(dt, w, q.Data); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestBlocks: the d·A + m·B form gives the dequantized weights at the stored scales and at
// changed ones (once written into the blocks), and its gradient is the chain rule's.
func TestBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, 512)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0} {
		q := quantized(t, dt, w)
		bl, err := newBlocks(q, len(w))
		if err != nil {
			t.Fatal(err)
		}
		td, tm := ones(len(bl.d0)), []float32(nil)
		if bl.m0 != nil {
			tm = ones(len(bl.m0))
		}
		got, want := make([]float32, len(w)), make([]float32, len(w))
		check := func(what string) {
			bl.weights(got, td, tm)
			if err := tensor.DequantizeRow(dt, q.Data, want); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("%s %s: weight %d is %g, the blocks dequantize to %g", dt, what, i, got[i], want[i])
				}
			}
		}
		check("stored scales")
		for i := range td {
			td[i] = 1 + 0.1*float32(r.NormFloat64())
		}
		for i := range tm {
			tm[i] = 1 + 0.1*float32(r.NormFloat64())
		}
		bl.apply(td, tm)
		// apply wrote the scales: dequantizing gives what weights gives for the same factors
		// relative to the original scales, which bl still holds.
		check("tuned scales")

		// The gradient of L = Σ c_j w_j with respect to the factors, by finite differences.
		c := make([]float32, len(w))
		for i := range c {
			c[i] = float32(r.NormFloat64())
		}
		gd, gm := make([]float32, len(td)), make([]float32, len(tm))
		bl.grads(c, gd, gm)
		L := func() float64 {
			x := make([]float32, len(w))
			bl.weights(x, td, tm)
			var s float64
			for i := range x {
				s += float64(c[i] * x[i])
			}
			return s
		}
		td[0] += 0.05 // f16 rounding of d: steps large enough to be exact in the ratio
		up := L()
		td[0] -= 0.1
		down := L()
		td[0] += 0.05
		fd := (up - down) / 0.1
		if math.Abs(fd-float64(gd[0])) > 0.02*math.Abs(fd)+1e-3 {
			t.Errorf("%s: d(L)/d(td[0]) = %g, finite differences %g", dt, gd[0], fd)
		}
	}
	if _, err := newBlocks(&Quantized{Type: tensor.MXFP4, Data: make([]byte, 136)}, 256); err == nil {
		t.Fatal("MXFP4 was accepted")
	}
	if _, err := newBlocks(&Quantized{Type: tensor.Q4_K, Data: make([]byte, 100)}, 256); err == nil {
		t.Fatal("a short Q4_K matrix was accepted")
	}
}

// TestScalesLowerKL: on a small random model quantized to Q4_0, tuning lowers the held-out KL
// from the float model, and the blocks it writes give the model it measured.
func TestScalesLowerKL(t *testing.T) {
	cfg := model.Config{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128,
		Vocab: 64, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5, Tied: true}
	net, err := nn.New(cfg, 1, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	net.Init(7)
	r := rand.New(rand.NewPCG(3, 4))
	teacher, student, quant := map[string][]float32{}, map[string][]float32{}, map[string]*Quantized{}
	for _, p := range net.Params() {
		w := append([]float32(nil), p.W...)
		if len(p.Shape) == 2 {
			for i := range w {
				w[i] *= 4 // weights that matter: logits far from uniform
			}
		}
		teacher[p.Name] = w
		if len(p.Shape) == 2 {
			quant[p.Name] = quantized(t, tensor.Q4_0, w)
		} else {
			student[p.Name] = w
		}
	}
	ids := make([]int32, 2000)
	for i := range ids {
		ids[i] = int32(r.IntN(cfg.Vocab))
	}
	before := map[string][]byte{}
	for n, q := range quant {
		before[n] = append([]byte(nil), q.Data...)
	}
	res, err := Scales(cfg, teacher, student, quant, ids, 1, Options{Batch: 4, Seq: 32, Steps: 30, LR: 3e-3, EvalEvery: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if !(res.KLBest < 0.9*res.KLBefore) || res.BestStep == 0 {
		t.Fatalf("tuning did not lower the held-out KL: %+v", res)
	}
	changed := 0
	for n, q := range quant {
		for i := range q.Data {
			if q.Data[i] != before[n][i] {
				changed++
			}
		}
	}
	if changed == 0 {
		t.Fatal("no scale was rewritten")
	}
	// Too little text is an error naming what it needs.
	if _, err := Scales(cfg, teacher, student, quant, ids[:40], 1, Options{Batch: 4, Seq: 32, Steps: 1}); err == nil {
		t.Fatal("40 tokens were accepted")
	}
}
