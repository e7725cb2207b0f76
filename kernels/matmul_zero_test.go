package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// randZero makes a zero-corrected weight [n, k] (random codes, fp16 scales, zeros, and a
// random column order when perm) and its float32 values.
func randZero(rng *rand.Rand, dt tensor.DType, n, k, group int, perm bool) (*tensor.Tensor, []float32) {
	bt, _ := tensor.ZeroBase(dt)
	rb, _ := bt.RowBytes(k)
	w := &tensor.Tensor{Name: "w", Type: dt, Shape: []int{n, k}, Data: make([]byte, n*rb),
		Zero: &tensor.GroupZero{Group: group, Corr: make([]float32, n*k/group)}}
	for i := range w.Data {
		w.Data[i] = byte(rng.IntN(256))
	}
	bb := bt.BlockBytes()
	for b := 0; b < len(w.Data)/bb; b++ { // sane fp16 scales
		d := tensor.F32ToF16(float32(rng.Float64()*0.01 + 1e-4))
		w.Data[b*bb], w.Data[b*bb+1] = byte(d), byte(d>>8)
	}
	for i := range w.Zero.Corr {
		w.Zero.Corr[i] = float32(rng.NormFloat64() * 0.05)
	}
	if perm {
		p := rng.Perm(k)
		w.Zero.Perm = make([]int32, k)
		for i, v := range p {
			w.Zero.Perm[i] = int32(v)
		}
	}
	vals, err := w.DequantizeZero()
	if err != nil {
		panic(err)
	}
	return w, vals
}

// randZeroHF makes a Q4_0Z weight [n, k] as hfquant.Repack makes one from an AWQ / GPTQ
// checkpoint: random codes, per row and group one fp16 scale s (every block of the group's d)
// and an integer zero z in [0, 16] (GPTQ v1's z reaches 16), Corr = s·(8 − z), and the zero
// codes of the fused decode kernel when the groups allow them; returns its float32 values.
func randZeroHF(rng *rand.Rand, n, k, group int, perm bool) (*tensor.Tensor, []float32) {
	w, _ := randZero(rng, tensor.Q4_0Z, n, k, group, perm)
	nb := k / 32
	for r := 0; r < n; r++ {
		for g := 0; g < k/group; g++ {
			s := tensor.F32ToF16(float32(rng.Float64()*0.01 + 1e-4))
			if rng.IntN(50) == 0 {
				s = 0 // an all-zero group
			}
			z := rng.IntN(17)
			w.Zero.Corr[g*n+r] = tensor.F16ToF32(s) * float32(8-z)
			for b := g * group / 32; b < (g+1)*group/32; b++ {
				w.Data[(r*nb+b)*18], w.Data[(r*nb+b)*18+1] = byte(s), byte(s>>8)
			}
		}
	}
	w.Zero.Codes = w.ZeroCodes()
	if (w.Zero.Codes != nil) != (group%128 == 0) {
		panic("zero codes not recovered")
	}
	vals, err := w.DequantizeZero()
	if err != nil {
		panic(err)
	}
	return w, vals
}

// checkMatMulZero compares MatMul on Q4_0Z / Q8_0Z weights with the f32 matmul of their
// dequantized values: the difference is the int8 quantization of the activations, bounded
// here by 2% of Σ|w·x| per output.
func checkMatMulZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2))
	// Q4_0Z "hf": made as from a checkpoint (randZeroHF), with zero codes for groups of 128k:
	// the fused decode kernel on VNNI for m = 1.
	for _, dt := range []tensor.DType{tensor.Q4_0Z, tensor.Q8_0Z, 0} {
		for _, sh := range []struct{ n, k, g int }{{64, 256, 128}, {40, 512, 64}, {33, 96, 32}, {16, 2048, 2048}, {21, 640, 128}, {70, 384, 384}} {
			for _, perm := range []bool{false, true} {
				for _, m := range []int{1, 3, 9} {
					if sh.k%sh.g != 0 {
						continue
					}
					var w *tensor.Tensor
					var vals []float32
					if dt == 0 {
						w, vals = randZeroHF(rng, sh.n, sh.k, sh.g, perm)
					} else {
						w, vals = randZero(rng, dt, sh.n, sh.k, sh.g, perm)
					}
					x := make([]float32, m*sh.k)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					out := make([]float32, m*sh.n)
					if err := MatMul(out, x, w, m); err != nil {
						t.Fatal(err)
					}
					for i := 0; i < m; i++ {
						for r := 0; r < sh.n; r++ {
							var want, mag float64
							for j := 0; j < sh.k; j++ {
								p := float64(vals[r*sh.k+j]) * float64(x[i*sh.k+j])
								want += p
								mag += math.Abs(p)
							}
							if d := math.Abs(float64(out[i*sh.n+r]) - want); d > 0.02*mag+1e-5 {
								t.Fatalf("%s (codes %v) [%d %d] g%d perm=%v m=%d: out[%d][%d] = %g, want %g (|terms| %g)",
									w.Type, w.Zero.Codes != nil, sh.n, sh.k, sh.g, perm, m, i, r, out[i*sh.n+r], want, mag)
							}
						}
					}
				}
			}
		}
	}
}

func TestMatMulZero(t *testing.T) { checkMatMulZero(t) }

// TestMatMulZeroPaths runs the same check on the AVX2 kernels (VNNI off) and on the plain-Go
// reference.
func TestMatMulZeroPaths(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		t.Run("avx2", checkMatMulZero)
		quantVNNI = true
	}
	Reference = true
	defer func() { Reference = false }()
	t.Run("reference", checkMatMulZero)
}

// TestMatMulZeroErrors: a zero-corrected weight without (or with inconsistent) corrections is
// an error naming the tensor, not a panic.
func TestMatMulZeroErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w, _ := randZero(rng, tensor.Q4_0Z, 8, 128, 64, false)
	out, x := make([]float32, 8), make([]float32, 128)
	for _, bad := range []func(*tensor.Tensor){
		func(w *tensor.Tensor) { w.Zero = nil },
		func(w *tensor.Tensor) { w.Zero = &tensor.GroupZero{Group: 48, Corr: w.Zero.Corr} },
		func(w *tensor.Tensor) { w.Zero = &tensor.GroupZero{Group: 64, Corr: w.Zero.Corr[1:]} },
		func(w *tensor.Tensor) { w.Zero = &tensor.GroupZero{Group: 64, Corr: w.Zero.Corr, Perm: []int32{1}} },
	} {
		c := *w
		bad(&c)
		if err := MatMul(out, x, &c, 1); err == nil {
			t.Fatalf("no error for %+v", c.Zero)
		}
	}
}
