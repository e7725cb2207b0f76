// Tests of train_qwen.go: NeoX RoPE against a float64 rotation of the pairs (i, i+hd/2) and
// the engine's Rope.Apply, its gradient as the rotation's transpose (<R x, y> = <x, Rᵀ y>) and
// by finite differences of a float64 loss, the bias add and the row sum against float64 sums.
package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestTrainRopeNeoX(t *testing.T) {
	const N, T, heads, hd = 6, 3, 2, 8
	r, err := NewRope(hd, 10000, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := make([]float32, T*hd)
	for p := 0; p < T; p++ {
		r.Table(cs[p*hd:(p+1)*hd], p)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, N*heads*hd)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	// float64 reference: angle pos·base^(-2i/hd) on (i, i+hd/2).
	rot := func(in []float64, sign float64) []float64 {
		out := append([]float64(nil), in...)
		for i := 0; i < N; i++ {
			pos := float64(i % T)
			for h := 0; h < heads; h++ {
				v := out[(i*heads+h)*hd : (i*heads+h+1)*hd]
				for j := 0; j < hd/2; j++ {
					a := pos * math.Pow(10000, -2*float64(j)/hd)
					c, s := math.Cos(a), sign*math.Sin(a)
					x0, x1 := v[j], v[j+hd/2]
					v[j], v[j+hd/2] = x0*c-x1*s, x0*s+x1*c
				}
			}
		}
		return out
	}
	x64 := make([]float64, len(x))
	for i, v := range x {
		x64[i] = float64(v)
	}
	want := rot(x64, 1)
	got := append([]float32(nil), x...)
	TrainRopeNeoX(Default, got, cs, N, T, heads, hd)
	eng := append([]float32(nil), x...)
	for i := 0; i < N; i++ {
		r.Apply(eng[i*heads*hd:(i+1)*heads*hd], heads, hd, cs[(i%T)*hd:(i%T+1)*hd])
	}
	for i := range got {
		if math.Abs(float64(got[i])-want[i]) > 1e-5 {
			t.Fatalf("element %d: %v, float64 %v", i, got[i], want[i])
		}
		if got[i] != eng[i] {
			t.Fatalf("element %d: %v, the engine's Rope.Apply %v", i, got[i], eng[i])
		}
	}
	// The gradient: dL/dx for L = <R x, y> is Rᵀ y, i.e. rot(y, -1); check it by finite
	// differences of the float64 loss too.
	y := make([]float32, len(x))
	y64 := make([]float64, len(x))
	for i := range y {
		y[i] = float32(rng.NormFloat64())
		y64[i] = float64(y[i])
	}
	dx := append([]float32(nil), y...)
	TrainRopeNeoXGrad(Default, dx, cs, N, T, heads, hd)
	loss := func(in []float64) float64 {
		var s float64
		for i, v := range rot(in, 1) {
			s += v * y64[i]
		}
		return s
	}
	for _, i := range []int{0, 3, 5, 17, 40, len(x) - 1} {
		const h = 1e-6
		xp, xm := append([]float64(nil), x64...), append([]float64(nil), x64...)
		xp[i] += h
		xm[i] -= h
		fd := (loss(xp) - loss(xm)) / (2 * h)
		if math.Abs(float64(dx[i])-fd) > 1e-5 {
			t.Errorf("grad %d: %v, finite differences %v", i, dx[i], fd)
		}
	}
	var a, b float64
	rx := rot(x64, 1)
	for i := range rx {
		a += rx[i] * y64[i]
		b += x64[i] * float64(dx[i])
	}
	if math.Abs(a-b) > 1e-4 {
		t.Errorf("<Rx,y> %v != <x,Rᵀy> %v", a, b)
	}
}

func TestTrainAddBiasSumRows(t *testing.T) {
	const N, C = 7, 130
	rng := rand.New(rand.NewPCG(3, 4))
	x, b := make([]float32, N*C), make([]float32, C)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, N*C)
	TrainAddBias(Default, out, x, b, N, C)
	for i := range out {
		if out[i] != x[i]+b[i%C] {
			t.Fatalf("add bias %d: %v, want %v", i, out[i], x[i]+b[i%C])
		}
	}
	TrainAddBias(Default, x, x, b, N, C) // in place
	for i := range out {
		if out[i] != x[i] {
			t.Fatalf("in place %d: %v, want %v", i, x[i], out[i])
		}
	}
	db := make([]float32, C)
	db[0] = 1 // accumulates
	TrainSumRows(Default, db, out, N, C)
	for j := 0; j < C; j++ {
		s := 0.0
		if j == 0 {
			s = 1
		}
		for i := 0; i < N; i++ {
			s += float64(out[i*C+j])
		}
		if math.Abs(float64(db[j])-s) > 1e-5 {
			t.Fatalf("sum rows %d: %v, float64 %v", j, db[j], s)
		}
	}
}
