package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftTargets: with one-hot soft targets the gradient is the hard targets' bit for bit,
// and with a general distribution it matches finite differences of -Σ soft·log softmax.
func TestSoftTargets(t *testing.T) {
	cfg := tinyConfig(true)
	const B, T = 2, 5
	m, err := New(cfg, B, T, nil)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 3, 0.3)
	r := rand.New(rand.NewPCG(4, 5))
	tokens, targets := randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)
	targets[3] = -1
	V := cfg.Vocab
	_, g := m.Flat()
	m.ZeroGrad()
	m.Forward(tokens, targets, B, T)
	m.Backward()
	hard := append([]float32(nil), g...)

	soft := make([]float32, B*T*V)
	for i, y := range targets {
		if y >= 0 {
			soft[i*V+int(y)] = 1
		}
	}
	if err := m.SetSoftTargets(soft); err != nil {
		t.Fatal(err)
	}
	m.ZeroGrad()
	m.Forward(tokens, targets, B, T)
	m.Backward()
	for i := range g {
		if g[i] != hard[i] {
			t.Fatalf("one-hot soft targets: gradient %d is %g, hard targets give %g", i, g[i], hard[i])
		}
	}

	// A general distribution: check the gradient of one weight against finite differences.
	for i := range B * T {
		var s float32
		for j := range V {
			soft[i*V+j] = float32(r.ExpFloat64())
			s += soft[i*V+j]
		}
		for j := range V {
			soft[i*V+j] /= s
		}
	}
	loss := func() float64 {
		m.Forward(tokens, nil, B, T)
		lg := m.Logits()
		var sum float64
		n := 0
		for i, y := range targets {
			if y < 0 {
				continue
			}
			row := lg[i*V : (i+1)*V]
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			var z float64
			for _, v := range row {
				z += math.Exp(float64(v - mx))
			}
			for j, v := range row {
				sum -= float64(soft[i*V+j]) * (float64(v-mx) - math.Log(z))
			}
			n++
		}
		return sum / float64(n)
	}
	m.ZeroGrad()
	m.Forward(tokens, targets, B, T)
	m.Backward()
	w, _ := m.Flat()
	for _, k := range []int{0, len(w) / 3, len(w) / 2, len(w) - 1} {
		old := w[k]
		const h = 1e-2
		w[k] = old + h
		up := loss()
		w[k] = old - h
		down := loss()
		w[k] = old
		fd := (up - down) / (2 * h)
		if math.Abs(fd-float64(g[k])) > 2e-3+0.02*math.Abs(fd) {
			t.Errorf("weight %d: gradient %g, finite differences %g", k, g[k], fd)
		}
	}
	if err := m.SetSoftTargets(soft[:V]); err == nil {
		t.Fatal("a short soft-target buffer was accepted")
	}
}
