package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// quantMatrix quantizes a random n x k matrix to dt.
func quantMatrix(t *testing.T, dt tensor.DType, n, k int, seed uint64) *tensor.Tensor {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	rb, err := dt.RowBytes(k)
	if err != nil {
		t.Fatal(err)
	}
	w := &tensor.Tensor{Name: "w", Type: dt, Shape: []int{n, k}, Data: make([]byte, n*rb)}
	row := make([]float32, k)
	for o := 0; o < n; o++ {
		for i := range row {
			row[i] = float32(r.NormFloat64() * 0.1)
		}
		if err := tensor.QuantizeRow(dt, row, w.Data[o*rb:(o+1)*rb]); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// TestMatMulDXMatchesRef compares MatMulDX (tiles of dequantized rows through Gemm) with the
// plain-Go reference on every dtype a frozen base can hold, with tiles that do not divide n,
// and with accumulation.
func TestMatMulDXMatchesRef(t *testing.T) {
	pool := NewPool(3)
	for _, c := range []struct {
		dt      tensor.DType
		m, n, k int
	}{
		{tensor.Q8_0, 7, 300, 96}, {tensor.Q8_0, 33, 1100, 256}, {tensor.Q4_K, 5, 300, 512}, {tensor.Q6_K, 9, 70, 256},
		{tensor.Q4_0, 4, 40, 64}, {tensor.F16, 6, 45, 40}, {tensor.BF16, 3, 20, 24}, {tensor.F32, 5, 17, 19},
	} {
		for _, acc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_%dx%dx%d_acc%v", c.dt, c.m, c.n, c.k, acc), func(t *testing.T) {
				w := quantMatrix(t, c.dt, c.n, c.k, uint64(c.n))
				r := rand.New(rand.NewPCG(2, uint64(c.k)))
				dy := make([]float32, c.m*c.n)
				for i := range dy {
					dy[i] = float32(r.NormFloat64())
				}
				got, want := make([]float32, c.m*c.k), make([]float32, c.m*c.k)
				for i := range got {
					got[i] = float32(i%5) - 2
					want[i] = got[i]
				}
				if err := MatMulDXRef(want, dy, w, c.m, acc); err != nil {
					t.Fatal(err)
				}
				if err := pool.MatMulDX(got, dy, w, c.m, acc); err != nil {
					t.Fatal(err)
				}
				var maxd, maxv float64
				for i := range got {
					maxd = max(maxd, math.Abs(float64(got[i]-want[i])))
					maxv = max(maxv, math.Abs(float64(want[i])))
				}
				if maxv == 0 || maxd > 1e-5*maxv*math.Sqrt(float64(c.n)) {
					t.Fatalf("max |diff| %g of %g", maxd, maxv)
				}
			})
		}
	}
}

// TestMatMulDXIsTransposeOfMatMul checks the adjoint identity <dy, x·wᵀ> = <dy·w, x> between
// the serving MatMul (reference path, exact dequantization) and MatMulDX.
func TestMatMulDXIsTransposeOfMatMul(t *testing.T) {
	defer func(r bool) { Reference = r }(Reference)
	Reference = true
	w := quantMatrix(t, tensor.Q4_K, 40, 256, 7)
	m, n, k := 3, 40, 256
	r := rand.New(rand.NewPCG(3, 3))
	x, dy := make([]float32, m*k), make([]float32, m*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for i := range dy {
		dy[i] = float32(r.NormFloat64())
	}
	y, dx := make([]float32, m*n), make([]float32, m*k)
	if err := MatMul(y, x, w, m); err != nil {
		t.Fatal(err)
	}
	if err := Default.MatMulDX(dx, dy, w, m, false); err != nil {
		t.Fatal(err)
	}
	var a, b float64
	for i := range y {
		a += float64(y[i]) * float64(dy[i])
	}
	for i := range dx {
		b += float64(dx[i]) * float64(x[i])
	}
	if math.Abs(a-b) > 1e-4*math.Abs(a) {
		t.Fatalf("<dy, x·wᵀ> = %g, <dy·w, x> = %g", a, b)
	}
}

func TestMatMulDXErrors(t *testing.T) {
	w := quantMatrix(t, tensor.Q8_0, 4, 32, 1)
	if err := Default.MatMulDX(make([]float32, 10), make([]float32, 8), w, 2, false); err == nil {
		t.Fatal("short dx accepted")
	}
	w.Data = w.Data[:10]
	if err := Default.MatMulDX(make([]float32, 64), make([]float32, 8), w, 2, false); err == nil {
		t.Fatal("truncated weight accepted")
	}
}
