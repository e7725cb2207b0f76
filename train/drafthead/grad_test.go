package drafthead

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/spec"
)

// loss64 is the mean cross-entropy of head j in float64, written directly from the formula.
func loss64(h *spec.Head, j int, hidden, emb []float32, labels []int32, e []float32) float64 {
	D, V := h.Dim, h.Vocab
	var total float64
	rows := 0
	for r, y := range labels {
		if y < 0 {
			continue
		}
		rows++
		x := hidden[r*D : (r+1)*D]
		z := make([]float64, D)
		for i := range D {
			a := float64(h.B[j][i])
			for k := range D {
				a += float64(h.W[j][i*D+k]) * float64(x[k])
				if h.U != nil {
					a += float64(h.U[j][i*D+k]) * float64(emb[r*D+k])
				}
			}
			z[i] = float64(x[i]) + a/(1+math.Exp(-a))
		}
		logits := make([]float64, V)
		mx := math.Inf(-1)
		for v := range V {
			for i := range D {
				logits[v] += z[i] * float64(e[v*D+i])
			}
			mx = max(mx, logits[v])
		}
		var sum float64
		for _, l := range logits {
			sum += math.Exp(l - mx)
		}
		total += math.Log(sum) + mx - logits[y]
	}
	return total / float64(rows)
}

// TestLossGradFiniteDifferences checks the hand-derived gradient of W, U (token input) and b
// against central differences of the float64 loss, with an unlabelled row among the
// labelled ones, with and without token input.
func TestLossGradFiniteDifferences(t *testing.T) {
	for _, tok := range []bool{false, true} {
		testLossGrad(t, tok)
	}
}

func testLossGrad(t *testing.T, tokenInput bool) {
	const D, V, n = 6, 13, 5
	rng := rand.New(rand.NewPCG(1, 2))
	h := spec.NewHead(D, V, 2, "test")
	var emb []float32
	if tokenInput {
		h.EnableTokenInput()
		emb = make([]float32, n*D)
		for i := range emb {
			emb[i] = float32(rng.NormFloat64())
		}
	}
	for j := range 2 {
		for i := range h.W[j] {
			h.W[j][i] = float32(rng.NormFloat64() * 0.5)
			if tokenInput {
				h.U[j][i] = float32(rng.NormFloat64() * 0.5)
			}
		}
		for i := range h.B[j] {
			h.B[j][i] = float32(rng.NormFloat64() * 0.5)
		}
	}
	hidden := make([]float32, n*D)
	for i := range hidden {
		hidden[i] = float32(rng.NormFloat64())
	}
	e := make([]float32, V*D)
	for i := range e {
		e[i] = float32(rng.NormFloat64())
	}
	labels := []int32{3, -1, 12, 0, 7}
	for _, pool := range []*kernels.Pool{kernels.Serial, kernels.Default} {
		for j := range 2 {
			dW, dU, db := make([]float32, D*D), make([]float32, D*D), make([]float32, D)
			var w work
			res := lossGrad(pool, &w, h, j, hidden, emb, labels, e, dW, dU, db)
			if res.rows != 4 {
				t.Fatalf("%d labelled rows, want 4", res.rows)
			}
			if got, want := res.loss/4, loss64(h, j, hidden, emb, labels, e); math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("head %d: loss %v, float64 reference %v", j, got, want)
			}
			check := func(name string, p []float32, g []float32) {
				const eps = 1e-3
				for i := range p {
					old := p[i]
					p[i] = old + eps
					up := loss64(h, j, hidden, emb, labels, e)
					p[i] = old - eps
					down := loss64(h, j, hidden, emb, labels, e)
					p[i] = old
					fd := (up - down) / (2 * eps)
					if math.Abs(float64(g[i])-fd) > 2e-3*(1+math.Abs(fd)) {
						t.Fatalf("head %d: d%s[%d] = %v, finite difference %v", j, name, i, g[i], fd)
					}
				}
			}
			check("W", h.W[j], dW)
			check("b", h.B[j], db)
			if tokenInput {
				check("U", h.U[j], dU)
			}
		}
	}
}
