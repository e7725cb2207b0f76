package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

var vecLens = []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 100, 768, 1001}

func relClose(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*(1+math.Abs(want))
}

func TestDotAxpyScaleAdd(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for _, n := range vecLens {
		a, b := randVec(r, n, 1), randVec(r, n, 1)
		var want, abs float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
			abs += math.Abs(float64(a[i]) * float64(b[i]))
		}
		if got := Dot(a, b); math.Abs(float64(got)-want) > 1e-6*abs+1e-7 {
			t.Fatalf("Dot n=%d = %v, want %v", n, got, want)
		}
		// Axpy: one FMA (assembly) or multiply-add (Go tail) per element; Scale and Add are exact
		// element-wise f32 operations.
		y := append([]float32(nil), b...)
		Axpy(y, 0.37, a)
		for i := range y {
			if want := 0.37*float64(a[i]) + float64(b[i]); !relClose(float64(y[i]), want, 2e-7) {
				t.Fatalf("Axpy n=%d [%d] = %v, want %v", n, i, y[i], want)
			}
		}
		y = append(y[:0], b...)
		Scale(y, -1.5)
		for i := range y {
			if y[i] != b[i]*-1.5 {
				t.Fatalf("Scale n=%d [%d] = %v, want %v", n, i, y[i], b[i]*-1.5)
			}
		}
		y = append(y[:0], b...)
		Add(y, a)
		for i := range y {
			if y[i] != b[i]+a[i] {
				t.Fatalf("Add n=%d [%d] = %v, want %v", n, i, y[i], b[i]+a[i])
			}
		}
	}
}

func TestFastElementwiseMatchesRef(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	for _, n := range vecLens {
		x, w := randVec(r, n, 3), randVec(r, n, 1)
		got, want := make([]float32, n), make([]float32, n)
		// RMSNorm: same f32 squares, f64 sum in another order: within 1e-6 relative.
		RMSNorm(got, x, w, 1e-5)
		rmsNormRef(want, x, w, 1e-5)
		for i := range got {
			if !relClose(float64(got[i]), float64(want[i]), 1e-6) {
				t.Fatalf("RMSNorm n=%d [%d] = %v, want %v", n, i, got[i], want[i])
			}
		}
		// Softmax: polynomial exp, within 1e-6 relative (plus 1e-12 absolute).
		copy(got, x)
		copy(want, x)
		if n > 3 {
			got[1], want[1] = float32(math.Inf(-1)), float32(math.Inf(-1))
			got[2], want[2] = -200, -200
		}
		Softmax(got)
		softmaxRef(want)
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-6*float64(want[i])+1e-12 {
				t.Fatalf("Softmax n=%d [%d] = %v, want %v", n, i, got[i], want[i])
			}
		}
		// SwiGLU, including large |a|.
		a := randVec(r, n, 4)
		if n > 3 {
			a[0], a[1], a[2] = 100, -100, -90
		}
		SwiGLU(got, a, w)
		swigluRef(want, a, w)
		for i := range got {
			if !relClose(float64(got[i]), float64(want[i]), 1e-6) {
				t.Fatalf("SwiGLU n=%d [%d] (a=%v) = %v, want %v", n, i, a[i], got[i], want[i])
			}
		}
	}
}

// TestExpAccuracy measures the AVX2 exp against math.Exp over [-87, 88] (skipped without AVX2).
func TestExpAccuracy(t *testing.T) {
	if !useFloatAsm {
		t.Skip("no AVX2")
	}
	const n = 1 << 16
	x := make([]float32, n)
	for i := range x {
		x[i] = -87 + 175*float32(i)/n
	}
	e := append([]float32(nil), x...)
	expSubF32(&e[0], 0, n)
	var worst float64
	for i, v := range x {
		want := math.Exp(float64(v))
		worst = max(worst, math.Abs(float64(e[i])-want)/want)
	}
	t.Logf("max relative error of the AVX2 exp on [-87, 88]: %.3g", worst)
	if worst > 4e-7 {
		t.Fatalf("exp max relative error %g > 4e-7", worst)
	}
}

func BenchmarkVec(b *testing.B) {
	for _, n := range []int{2048, 5632, 32000} {
		r := rand.New(rand.NewSource(1))
		x, y, w := randVec(r, n, 1), randVec(r, n, 1), randVec(r, n, 1)
		out := make([]float32, n)
		for _, impl := range []string{"ref", "fast"} {
			run := func(name string, bytes int, fn func()) {
				b.Run(fmt.Sprintf("%s/n=%d/%s", name, n, impl), func(b *testing.B) {
					defer func(v bool) { Reference = v }(Reference)
					Reference = impl == "ref"
					b.SetBytes(int64(bytes))
					for b.Loop() {
						fn()
					}
				})
			}
			run("Dot", 8*n, func() { Dot(x, y) })
			run("Axpy", 8*n, func() { Axpy(out, 0.5, x) })
			run("RMSNorm", 8*n, func() { RMSNorm(out, x, w, 1e-5) })
			run("Softmax", 4*n, func() { copy(out, x); Softmax(out) })
			run("SwiGLU", 8*n, func() { SwiGLU(out, x, y) })
			run("Add", 8*n, func() { Add(out, x) })
		}
	}
}
