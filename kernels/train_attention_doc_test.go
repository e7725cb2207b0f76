// The document mask of packed sequences (TrainAttnOpts.Starts): packed examples give the
// outputs and gradients of each example run alone through TrainAttention, and the gradients
// equal finite differences of the masked forward.
package kernels_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
)

// docStarts lays documents of the given lengths (summing to T) along each of B rows.
func docStarts(B, T int, lens []int) []int32 {
	st := make([]int32, B*T)
	for b := range B {
		t := 0
		for _, n := range lens {
			for i := range n {
				st[b*T+t+i] = int32(t)
			}
			t += n
		}
	}
	return st
}

func randF32(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func TestTrainAttentionDocMatchesSeparate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lens := []int{5, 70, 1, 24, 30} // crosses the row blocks; a one-token document
	T, B := 130, 2
	s := kernels.AttnShape{B: B, T: T, H: 4, KVH: 2, HD: 8}
	qd, kvd := s.QD(), s.KVD()
	q, k, v, dy := randF32(r, B*T*qd), randF32(r, B*T*kvd), randF32(r, B*T*kvd), randF32(r, B*T*qd)
	o := kernels.TrainAttnOpts{Starts: docStarts(B, T, lens)}
	out, att := make([]float32, B*T*qd), make([]float32, B*s.H*T*T)
	kernels.TrainAttentionWindow(kernels.Default, out, att, q, k, v, s, o)
	gq, gk, gv := make([]float32, B*T*qd), make([]float32, B*T*kvd), make([]float32, B*T*kvd)
	kernels.TrainAttentionWindowGrad(kernels.Default, gq, gk, gv, dy, att, q, k, v, make([]float32, B*s.KVH*T*T), s, o)
	for b := range B {
		t0 := 0
		for _, n := range lens {
			d := kernels.AttnShape{B: 1, T: n, H: s.H, KVH: s.KVH, HD: s.HD}
			cut := func(x []float32, w int) []float32 { return append([]float32(nil), x[(b*T+t0)*w:(b*T+t0+n)*w]...) }
			dq, dk, dvv := cut(q, qd), cut(k, kvd), cut(v, kvd)
			dout, datt := make([]float32, n*qd), make([]float32, s.H*n*n)
			kernels.TrainAttention(kernels.Default, dout, datt, dq, dk, dvv, d)
			hq, hk, hv := make([]float32, n*qd), make([]float32, n*kvd), make([]float32, n*kvd)
			kernels.TrainAttentionGrad(kernels.Default, hq, hk, hv, cut(dy, qd), datt, dq, dk, dvv, make([]float32, s.KVH*n*n), d)
			for _, c := range []struct {
				name      string
				got, want []float32
				w         int
			}{{"out", out, dout, qd}, {"dq", gq, hq, qd}, {"dk", gk, hk, kvd}, {"dv", gv, hv, kvd}} {
				got := c.got[(b*T+t0)*c.w : (b*T+t0+n)*c.w]
				for i := range got {
					if d := math.Abs(float64(got[i] - c.want[i])); d > 1e-5*(1+math.Abs(float64(c.want[i]))) {
						t.Fatalf("row %d document at %d (length %d): %s[%d] = %g, alone %g", b, t0, n, c.name, i, got[i], c.want[i])
					}
				}
			}
			t0 += n
		}
	}
}

func TestTrainAttentionDocGradFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lens := []int{3, 1, 6, 2}
	T, B := 12, 1
	s := kernels.AttnShape{B: B, T: T, H: 2, KVH: 1, HD: 4}
	qd, kvd := s.QD(), s.KVD()
	q, k, v, dy := randF32(r, B*T*qd), randF32(r, B*T*kvd), randF32(r, B*T*kvd), randF32(r, B*T*qd)
	o := kernels.TrainAttnOpts{Starts: docStarts(B, T, lens)}
	loss := func() float64 { // Σ out·dy in float64 over the float32 forward
		out, att := make([]float32, B*T*qd), make([]float32, B*s.H*T*T)
		kernels.TrainAttentionWindow(kernels.Serial, out, att, q, k, v, s, o)
		var l float64
		for i := range out {
			l += float64(out[i]) * float64(dy[i])
		}
		return l
	}
	out, att := make([]float32, B*T*qd), make([]float32, B*s.H*T*T)
	kernels.TrainAttentionWindow(kernels.Serial, out, att, q, k, v, s, o)
	gq, gk, gv := make([]float32, B*T*qd), make([]float32, B*T*kvd), make([]float32, B*T*kvd)
	kernels.TrainAttentionWindowGrad(kernels.Serial, gq, gk, gv, dy, att, q, k, v, make([]float32, B*s.KVH*T*T), s, o)
	const h = 1e-2
	for _, c := range []struct {
		name string
		x, g []float32
	}{{"q", q, gq}, {"k", k, gk}, {"v", v, gv}} {
		for i := range c.x {
			x0 := c.x[i]
			c.x[i] = x0 + h
			lp := loss()
			c.x[i] = x0 - h
			lm := loss()
			c.x[i] = x0
			fd := (lp - lm) / (2 * h)
			if d := math.Abs(fd - float64(c.g[i])); d > 2e-3*(1+math.Abs(fd)) {
				t.Errorf("d%s[%d] = %g, finite differences %g", c.name, i, c.g[i], fd)
			}
		}
	}
}

func TestTrainCrossEntropyIgnore(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	N, V := 5, 7
	logits := randF32(r, N*V)
	targets := []int32{2, -1, 6, -1, 0}
	losses, probs := make([]float32, N), make([]float32, N*V)
	mean := kernels.TrainCrossEntropy(kernels.Default, losses, probs, logits, targets, N, V)
	kept := []int32{2, 6, 0}
	kl := make([]float32, 3*V)
	copy(kl[0:V], logits[0:V])
	copy(kl[V:2*V], logits[2*V:3*V])
	copy(kl[2*V:], logits[4*V:5*V])
	l2, p2 := make([]float32, 3), make([]float32, 3*V)
	want := kernels.TrainCrossEntropy(kernels.Default, l2, p2, kl, kept, 3, V)
	if math.Abs(float64(mean-want)) > 1e-6 || losses[1] != 0 || losses[3] != 0 {
		t.Fatalf("masked mean %g, want %g (losses %v)", mean, want, losses)
	}
	kernels.TrainCrossEntropyGrad(kernels.Default, probs, targets, N, V, 1/3.)
	for _, i := range []int{1, 3} {
		for _, d := range probs[i*V : (i+1)*V] {
			if d != 0 {
				t.Fatalf("row %d (ignored) has gradient %v", i, probs[i*V:(i+1)*V])
			}
		}
	}
	if n := kernels.CountTargets(targets); n != 3 {
		t.Fatalf("CountTargets = %d", n)
	}
}
