// This file checks the training layers of package kernels (kernels/train_rows.go,
// train_attention.go), which graph/exec/trainexec runs: every forward against its float64 reference and its backward
// against central finite differences of that reference (h = 1e-6 in float64), on small odd
// shapes. The scalar differentiated is Σ dout·out for a random dout; gradients are checked to
// |got − want| <= 2e-4 + 2e-3·|want|, and each backward must ADD to the gradients it is given.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
)

var testPool = kernels.NewPool(3)

func randF32(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func dot64(a []float64, b []float32) float64 {
	var s float64
	for i := range a {
		s += a[i] * float64(b[i])
	}
	return s
}

// fdGrad is the central-difference gradient of f with respect to x (perturbed in place).
func fdGrad(x []float64, f func() float64) []float64 {
	const h = 1e-6
	g := make([]float64, len(x))
	for i := range x {
		v := x[i]
		x[i] = v + h
		fp := f()
		x[i] = v - h
		fm := f()
		x[i] = v
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

// checkClose fails when any |got[i] − want[i]| > atol + rtol·|want[i]|.
func checkClose(t *testing.T, name string, got []float32, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	worst, at := 0.0, -1
	for i := range want {
		d := math.Abs(float64(got[i]) - want[i])
		if e := d - (atol + rtol*math.Abs(want[i])); e > worst || math.IsNaN(d) {
			worst, at = e, i
		}
	}
	if at >= 0 {
		t.Errorf("%s: element %d = %g, want %g", name, at, got[at], want[at])
	}
}

// preload returns a random starting gradient and a function giving what backward added to it.
func preload(r *rand.Rand, n int) (g []float32, added func() []float32) {
	g0 := randF32(r, n, 1)
	g = append([]float32(nil), g0...)
	return g, func() []float32 {
		d := make([]float32, n)
		for i := range d {
			d[i] = g[i] - g0[i]
		}
		return d
	}
}

const gradAtol, gradRtol = 2e-4, 2e-3

func TestEmbeddingGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	N, C, V := 7, 5, 4
	wte := randF32(r, V*C, 1)
	tokens := []int32{0, 3, 3, 1, 0, 3, 2}
	out := make([]float32, N*C)
	kernels.TrainEmbedding(out, wte, tokens, N, C)
	w64 := to64(wte)
	checkClose(t, "forward", out, embedding64(w64, tokens, C), 0, 0)
	dout := randF32(r, N*C, 1)
	dw, added := preload(r, V*C)
	kernels.TrainEmbeddingGrad(dw, dout, tokens, N, C)
	checkClose(t, "dwte", added(), fdGrad(w64, func() float64 { return dot64(embedding64(w64, tokens, C), dout) }), gradAtol, gradRtol)
}

func TestRMSNormGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][2]int{{1, 1}, {3, 7}, {5, 33}} {
		N, C := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", N, C), func(t *testing.T) {
			x, w := randF32(r, N*C, 1), randF32(r, C, 1)
			const eps = 1e-5
			out, rstd := make([]float32, N*C), make([]float32, N)
			kernels.TrainRMSNorm(testPool, out, rstd, x, w, N, C, eps)
			x64, w64 := to64(x), to64(w)
			checkClose(t, "forward", out, rmsnorm64(x64, w64, N, C, eps), 1e-6, 1e-5)
			dout := randF32(r, N*C, 1)
			dx, addedX := preload(r, N*C)
			dw, addedW := preload(r, C)
			kernels.TrainRMSNormGrad(testPool, dx, dw, dout, x, w, rstd, N, C)
			f := func() float64 { return dot64(rmsnorm64(x64, w64, N, C, eps), dout) }
			checkClose(t, "dx", addedX(), fdGrad(x64, f), gradAtol, gradRtol)
			checkClose(t, "dw", addedW(), fdGrad(w64, f), gradAtol, gradRtol)
		})
	}
}

func TestLinearGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 3))
	for _, sh := range [][3]int{{1, 1, 1}, {5, 3, 7}, {13, 17, 9}, {8, 16, 24}} {
		N, C, OC := sh[0], sh[1], sh[2]
		t.Run(fmt.Sprintf("%dx%dx%d", N, C, OC), func(t *testing.T) {
			inp, w := randF32(r, N*C, 1), randF32(r, OC*C, 1)
			out := make([]float32, N*OC)
			kernels.TrainLinear(testPool, out, inp, w, N, C, OC)
			in64, w64 := to64(inp), to64(w)
			checkClose(t, "forward", out, linear64(in64, w64, N, C, OC), 1e-5, 1e-5)
			dout := randF32(r, N*OC, 1)
			dx, addedX := preload(r, N*C)
			dw, addedW := preload(r, OC*C)
			kernels.TrainLinearGrad(testPool, dx, dw, dout, inp, w, N, C, OC, true)
			f := func() float64 { return dot64(linear64(in64, w64, N, C, OC), dout) }
			checkClose(t, "dinp", addedX(), fdGrad(in64, f), gradAtol, gradRtol)
			checkClose(t, "dw", addedW(), fdGrad(w64, f), gradAtol, gradRtol)
		})
	}
}

func TestRopeGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 4))
	N, T, heads, hd := 6, 3, 3, 6
	const theta = 10000.0
	rope, err := kernels.NewRope(hd, theta, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := make([]float32, T*hd)
	for p := 0; p < T; p++ {
		rope.Table(cs[p*hd:(p+1)*hd], p)
	}
	x := randF32(r, N*heads*hd, 1)
	x64 := to64(x)
	out := append([]float32(nil), x...)
	kernels.TrainRope(testPool, out, cs, N, T, heads, hd)
	checkClose(t, "forward", out, rope64(x64, N, T, heads, hd, theta), 1e-5, 1e-5)
	dout := randF32(r, N*heads*hd, 1)
	dx := append([]float32(nil), dout...)
	kernels.TrainRopeGrad(testPool, dx, cs, N, T, heads, hd)
	f := func() float64 { return dot64(rope64(x64, N, T, heads, hd, theta), dout) }
	checkClose(t, "dx", dx, fdGrad(x64, f), gradAtol, gradRtol)
}

func TestAttentionGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 5))
	for _, s := range []kernels.AttnShape{{B: 1, T: 1, H: 1, KVH: 1, HD: 2}, {B: 2, T: 5, H: 4, KVH: 2, HD: 4}, {B: 1, T: 7, H: 3, KVH: 3, HD: 6}, {B: 2, T: 4, H: 4, KVH: 1, HD: 10}, {B: 1, T: 33, H: 2, KVH: 1, HD: 16}} {
		t.Run(fmt.Sprintf("%+v", s), func(t *testing.T) {
			nq, nkv := s.B*s.T*s.QD(), s.B*s.T*s.KVD()
			q, k, v := randF32(r, nq, 1), randF32(r, nkv, 1), randF32(r, nkv, 1)
			out, att := make([]float32, nq), make([]float32, s.B*s.H*s.T*s.T)
			kernels.TrainAttention(testPool, out, att, q, k, v, s)
			q64, k64, v64 := to64(q), to64(k), to64(v)
			f64 := func() []float64 { return attention64(q64, k64, v64, s.B, s.T, s.H, s.KVH, s.HD) }
			checkClose(t, "forward", out, f64(), 1e-5, 1e-4)
			dout := randF32(r, nq, 1)
			dq, addedQ := preload(r, nq)
			dk, addedK := preload(r, nkv)
			dv, addedV := preload(r, nkv)
			kernels.TrainAttentionGrad(testPool, dq, dk, dv, dout, att, q, k, v, make([]float32, s.B*s.KVH*s.T*s.T), s)
			f := func() float64 { return dot64(f64(), dout) }
			checkClose(t, "dq", addedQ(), fdGrad(q64, f), gradAtol, gradRtol)
			checkClose(t, "dk", addedK(), fdGrad(k64, f), gradAtol, gradRtol)
			checkClose(t, "dv", addedV(), fdGrad(v64, f), gradAtol, gradRtol)
		})
	}
}

func TestSwiGLUGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 6))
	N, F := 3, 13
	n := N * F
	g, u := randF32(r, n, 2), randF32(r, n, 1)
	h := make([]float32, n)
	kernels.TrainSwiGLU(testPool, h, g, u, N, F)
	g64, u64 := to64(g), to64(u)
	checkClose(t, "forward", h, swiglu64(g64, u64), 1e-6, 1e-5)
	dh := randF32(r, n, 1)
	dg, addedG := preload(r, n)
	du, addedU := preload(r, n)
	kernels.TrainSwiGLUGrad(testPool, dg, du, dh, g, u, n)
	f := func() float64 { return dot64(swiglu64(g64, u64), dh) }
	checkClose(t, "dg", addedG(), fdGrad(g64, f), gradAtol, gradRtol)
	checkClose(t, "du", addedU(), fdGrad(u64, f), gradAtol, gradRtol)
}

// TestResidualGrad checks the residual add and the identity backward the model relies on: the
// gradient of Σ dout·(a+b) with respect to both a and b is dout itself.
func TestResidualGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 7))
	n := 11
	a, b := randF32(r, n, 1), randF32(r, n, 1)
	out := append([]float32(nil), b...)
	kernels.TrainResidual(out, a, out)
	a64, b64 := to64(a), to64(b)
	checkClose(t, "forward", out, add64(a64, b64), 1e-7, 1e-6)
	dout := randF32(r, n, 1)
	f := func() float64 { return dot64(add64(a64, b64), dout) }
	checkClose(t, "da", dout, fdGrad(a64, f), gradAtol, gradRtol)
	checkClose(t, "db", dout, fdGrad(b64, f), gradAtol, gradRtol)
}

func TestCrossEntropyGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 8))
	N, V := 6, 13
	logits := randF32(r, N*V, 3)
	logits[5*V+2] = -200 // target probability underflows float32: the exact path
	targets := []int32{0, 12, 5, 5, 7, 2}
	losses, probs := make([]float32, N), make([]float32, N*V)
	loss := kernels.TrainCrossEntropy(testPool, losses, probs, logits, targets, N, V)
	l64 := to64(logits)
	want := crossEntropy64(l64, targets, N, V)
	if math.Abs(float64(loss)-want) > 1e-5*math.Abs(want) {
		t.Errorf("loss %g, want %g", loss, want)
	}
	kernels.TrainCrossEntropyGrad(testPool, probs, targets, N, V, 1/float32(N))
	checkClose(t, "dlogits", probs, fdGrad(l64, func() float64 { return crossEntropy64(l64, targets, N, V) }), 1e-5, gradRtol)
}
