package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// checkFloatMatMul runs p.MatMul on x [m,k] and w (converted to dt) and compares every output
// with the float64 product of x (rounded to F16 when roundX) and the dequantized weights:
// |out - want| <= 1e-5 * Σ|x_i w_i| + 1e-7.
func checkFloatMatMul(t *testing.T, p *Pool, r *rand.Rand, dt tensor.DType, m, n, k int, roundX, unaligned bool) {
	t.Helper()
	x := randVec(r, m*k, 1)
	w32 := f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1))
	w, err := tensor.Convert(w32, dt)
	if err != nil {
		t.Fatal(err)
	}
	if unaligned {
		raw := make([]byte, len(w.Data)+1)
		copy(raw[1:], w.Data)
		w.Data = raw[1:]
	}
	deq, err := w.Float32()
	if err != nil {
		t.Fatal(err)
	}
	xr := x
	if roundX {
		xr = make([]float32, len(x))
		for i, v := range x {
			xr[i] = tensor.F16ToF32(tensor.F32ToF16(v))
		}
	}
	out := make([]float32, m*n)
	for i := range out {
		out[i] = float32(math.NaN()) // the kernels must overwrite, not accumulate
	}
	if err := p.MatMul(out, x, w, m); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, a float64
			for l := 0; l < k; l++ {
				v := float64(xr[i*k+l]) * float64(deq[j*k+l])
				s += v
				a += math.Abs(v)
			}
			if d := math.Abs(s - float64(out[i*n+j])); !(d <= 1e-5*a+1e-7) {
				t.Fatalf("%s m=%d n=%d k=%d workers=%d round=%v: out[%d,%d] = %v, want %v", dt, m, n, k, p.Workers(), roundX, i, j, out[i*n+j], s)
			}
		}
	}
}

func TestFloatMatMulShapes(t *testing.T) {
	if !useFloatAsm {
		t.Skip("no AVX2/FMA/F16C")
	}
	// Run every shape through the direct small-m path and through the packed GEMM.
	// GEMV: sequential rows and 4 interleaved rows.
	// AVX2 micro-kernels, and the AVX-512 ones where the CPU has them.
	defer func(v int, o, z bool) { gemmDirectMaxM, gemvOneRow, useAVX512 = v, o, z }(gemmDirectMaxM, gemvOneRow, useAVX512)
	for _, z := range avx512Modes() {
		for _, c := range []struct {
			d   int
			one bool
		}{{64, true}, {0, false}} {
			gemmDirectMaxM, gemvOneRow, useAVX512 = c.d, c.one, z
			t.Run(fmt.Sprintf("avx512=%v/directMaxM=%d/gemvOneRow=%v", z, c.d, c.one), testFloatMatMulShapes)
		}
	}
}

// avx512Modes lists the values of useAVX512 the tests run: false, and true on CPUs with it.
func avx512Modes() []bool {
	if useAVX512 {
		return []bool{false, true}
	}
	return []bool{false}
}

func testFloatMatMulShapes(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	pools := []*Pool{Serial, NewPool(3)}
	dts := []tensor.DType{tensor.F32, tensor.F16, tensor.BF16}
	// Every m in 1..9, tails in n (not a multiple of 4) and k (not a multiple of 8 or 16).
	for _, dt := range dts {
		for m := 1; m <= 9; m++ {
			for _, nk := range [][2]int{{1, 1}, {3, 7}, {4, 8}, {5, 15}, {7, 16}, {9, 17}, {13, 24}, {6, 40}, {11, 33}} {
				checkFloatMatMul(t, pools[m%2], r, dt, m, nk[0], nk[1], false, false)
			}
		}
	}
	// Larger shapes crossing the k block (512) and n block (128) sizes, on 1 and 3 workers.
	for _, dt := range dts {
		for _, s := range [][3]int{{1, 300, 1030}, {1, 37, 172}, {2, 131, 520}, {17, 133, 1037}, {32, 260, 64}, {64, 9, 1024}, {67, 21, 72}, {100, 130, 530}, {70, 150, 1040}, {66, 150, 1032}} {
			for _, p := range pools {
				checkFloatMatMul(t, p, r, dt, s[0], s[1], s[2], false, false)
			}
		}
	}
	// Unaligned weight data.
	for _, dt := range dts {
		checkFloatMatMul(t, pools[1], r, dt, 1, 37, 100, false, true)
		checkFloatMatMul(t, pools[1], r, dt, 5, 37, 100, false, true)
	}
}

func TestFloatMatMulRoundF16(t *testing.T) {
	if !useFloatAsm {
		t.Skip("no AVX2/FMA/F16C")
	}
	defer func(v bool) { RoundF16Activations = v }(RoundF16Activations)
	RoundF16Activations = true
	r := rand.New(rand.NewSource(8))
	for _, s := range [][3]int{{1, 37, 100}, {1, 64, 64}, {7, 37, 100}, {12, 20, 515}, {70, 9, 40}} {
		checkFloatMatMul(t, Default, r, tensor.F16, s[0], s[1], s[2], true, false)
		// Other types are not rounded.
		checkFloatMatMul(t, Default, r, tensor.F32, s[0], s[1], s[2], false, false)
	}
}

func TestRoundToF16(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, n := range []int{0, 1, 7, 8, 9, 33, 1000} {
		x := randVec(r, n, 10)
		if n > 3 {
			x[0], x[1], x[2], x[3] = 1e-6, -7e4, 65519, float32(math.Inf(-1))
		}
		got := make([]float32, n)
		RoundToF16(got, x)
		for i, v := range x {
			if want := tensor.F16ToF32(tensor.F32ToF16(v)); got[i] != want {
				t.Fatalf("n=%d: RoundToF16(%v) = %v, want %v", n, v, got[i], want)
			}
		}
	}
}

// BenchmarkFloatMatMul reports GFLOP/s (2*m*n*k per op) and weight GB/s for TinyLlama shapes,
// reference vs AVX2 vs AVX-512 (m > 1), 1 and 2 threads.
func BenchmarkFloatMatMul(b *testing.B) {
	shapes := [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}}
	r := rand.New(rand.NewSource(1))
	for _, dt := range []tensor.DType{tensor.F16, tensor.F32, tensor.BF16} {
		for _, s := range shapes {
			n, k := s[0], s[1]
			w32 := f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1))
			w, _ := tensor.Convert(w32, dt)
			for _, m := range []int{1, 512} {
				x := randVec(r, m*k, 1)
				out := make([]float32, m*n)
				for _, impl := range []string{"ref", "avx2", "avx512"} {
					if impl == "ref" && (m > 1 || dt != tensor.F16) {
						continue // the reference GEMM takes minutes; compare it at m=1 only
					}
					if impl == "avx512" && (m == 1 || !useAVX512) {
						continue // GEMV has no AVX-512 kernel
					}
					for _, th := range []int{1, 2} {
						p := NewPool(th)
						b.Run(fmt.Sprintf("%s/%dx%d/m=%d/%s/t=%d", dt, n, k, m, impl, th), func(b *testing.B) {
							defer func(v, z bool) { Reference, useAVX512 = v, z }(Reference, useAVX512)
							Reference = impl == "ref"
							useAVX512 = useAVX512 && impl == "avx512"
							for b.Loop() {
								p.MatMul(out, x, w, m)
							}
							sec := b.Elapsed().Seconds() / float64(b.N)
							b.ReportMetric(2*float64(m*n*k)/sec/1e9, "GFLOP/s")
							b.ReportMetric(float64(len(w.Data))/sec/1e9, "wGB/s")
						})
					}
				}
			}
		}
	}
}
