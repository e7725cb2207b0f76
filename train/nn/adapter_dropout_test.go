// LoRA dropout: in training it changes the branch (and so the loss), repeatably for one key;
// off (evaluation) it is the model without dropout exactly; and with a fixed mask the A and B
// gradients equal finite differences.
package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/train/nn"
)

// droppedPair returns the adapted model with dropout p and the same adapter without dropout,
// with equal random A and B.
func droppedPair(t *testing.T, p float64) (drop, plain *nn.Model) {
	t.Helper()
	_, plain, a := adapted(t, true, nn.AdapterTargets...)
	d := *a
	d.Dropout = p
	drop, err := nn.NewWith(adaptCfg, 2, 8, nil, nn.Options{Adapter: &d})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range drop.Params() {
		copy(q.W, plain.Params()[i].W)
	}
	return drop, plain
}

func TestAdapterDropoutTrainingOnly(t *testing.T) {
	drop, plain := droppedPair(t, 0.3)
	lp := plain.Forward(adaptTokens, adaptTargets, 2, 8)
	if l := drop.Forward(adaptTokens, adaptTargets, 2, 8); l != lp {
		t.Fatalf("dropout off (evaluation): loss %g, without dropout %g", l, lp)
	}
	drop.SetDropout(true, 7, 1)
	l1 := drop.Forward(adaptTokens, adaptTargets, 2, 8)
	if l1 == lp {
		t.Fatalf("dropout on: loss %g equals the loss without dropout", l1)
	}
	if l := drop.Forward(adaptTokens, adaptTargets, 2, 8); l != l1 {
		t.Fatalf("dropout on, same key: loss %g then %g", l1, l)
	}
	drop.SetDropout(true, 7, 2)
	if l := drop.Forward(adaptTokens, adaptTargets, 2, 8); l == l1 {
		t.Fatalf("dropout on, another key: the same loss %g", l)
	}
	plain.SetDropout(true, 7, 1) // a model without dropout nodes ignores it
	if l := plain.Forward(adaptTokens, adaptTargets, 2, 8); l != lp {
		t.Fatalf("no dropout, SetDropout on: loss %g, was %g", l, lp)
	}
	drop.SetDropout(false, 0, 0)
	if l := drop.Forward(adaptTokens, adaptTargets, 2, 8); l != lp {
		t.Fatalf("dropout off again: loss %g, without dropout %g", l, lp)
	}
	t.Logf("loss without dropout %.6f, with dropout 0.3 (key 1) %.6f", lp, l1)
}

func TestAdapterDropoutGradFiniteDifferences(t *testing.T) {
	drop, _ := droppedPair(t, 0.5)
	drop.SetDropout(true, 3, 11)
	drop.ZeroGrad()
	drop.Forward(adaptTokens, adaptTargets, 2, 8)
	drop.Backward()
	r := rand.New(rand.NewPCG(1, 2))
	const h = 3e-3 // dropout's 1/(1-p) doubles the branch: more curvature than the plain test's 1e-2 allows
	for _, p := range drop.Params() {
		for range 3 {
			i := r.IntN(len(p.W))
			w0 := p.W[i]
			p.W[i] = w0 + h
			lp := float64(drop.Forward(adaptTokens, adaptTargets, 2, 8))
			p.W[i] = w0 - h
			lm := float64(drop.Forward(adaptTokens, adaptTargets, 2, 8))
			p.W[i] = w0
			fd := (lp - lm) / (2 * h)
			if d := math.Abs(fd - float64(p.G[i])); d > 2e-4+0.03*math.Abs(fd) {
				t.Errorf("%s[%d]: gradient %g, finite differences %g", p.Name, i, p.G[i], fd)
			}
		}
	}
}
