package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// zeroExact is the exact value of the fused Q4_0Z decode row r of w against the quantized token
// a (its qs and block scales d): Σ_b d_b·dx_b·Σ_j (q_j − z)·x_j in float64, from the weight's
// Q4_0 bytes and the zero codes −z.
func zeroExact(w *tensor.Tensor, a *q8Acts, r int) float64 {
	k := w.Shape[1]
	nb, nu := k/32, k/128
	var sum float64
	for b := 0; b < nb; b++ {
		blk := w.Data[(r*nb+b)*18:]
		mz := int32(w.Zero.Codes[r*nu+b/4])
		var dot int32
		for j := 0; j < 16; j++ {
			dot += (int32(blk[2+j]&0xf) + mz) * int32(a.qs[b*32+j])
			dot += (int32(blk[2+j]>>4) + mz) * int32(a.qs[b*32+16+j])
		}
		sum += float64(f16(blk)) * float64(a.d[b]) * float64(dot)
	}
	return sum
}

// TestRows4PZ checks the Q4_0Z four-stream decode kernel: 1, 2, 3 and 7 row groups, 1, 2, 3, 5,
// 16 and 17 units per row, streams in scattered order and results strided. The kernel in use
// (assembly on VNNI) must equal its Go twin bit for bit, and both the exact integer math of the
// zero-corrected weight times the quantized token (zeroExact) within float32 rounding; nothing
// may be written outside the result slots.
func TestRows4PZ(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, groups := range []int{1, 2, 3, 7} {
		for _, nu := range []int{1, 2, 3, 5, 16, 17} {
			k := nu * 128
			rows := 4 * groups
			w, _ := randZeroHF(rng, rows, k, 128, false)
			a := getQ8Acts(1, k, false)
			a.quantize(Serial, qRandVec(rng, k, 1), false)
			a.prepQuadZero()
			// Stream j holds rows [j·groups, (j+1)·groups), walked in reverse stream order;
			// row j of group i stores at got[5·(4i+j)].
			const ostride = 5
			run := func(kern func(w **byte, z **int8, nrows int, rec *byte, nu int, out **float32, oadv int)) []float32 {
				got := make([]float32, ostride*4*groups+1)
				for i := range got {
					got[i] = -12345
				}
				var ws [4]*byte
				var zs [4]*int8
				var outs [4]*float32
				for j := 0; j < 4; j++ {
					r := (3 - j) * groups
					ws[j], zs[j], outs[j] = &w.Data[r*nu*72], &w.Zero.Codes[r*nu], &got[ostride*j]
				}
				kern(&ws[0], &zs[0], groups, &a.zr[0], nu, &outs[0], 4*ostride*4)
				return got
			}
			got, twin := run(q4Rows4PZ), run(q4Rows4PZGo)
			for i, v := range got {
				if i%ostride != 0 || i == len(got)-1 {
					if v != -12345 || twin[i] != -12345 {
						t.Fatalf("groups %d nu %d: slot %d written (%g, twin %g)", groups, nu, i, v, twin[i])
					}
					continue
				}
				if math.Float32bits(v) != math.Float32bits(twin[i]) {
					t.Fatalf("groups %d nu %d: slot %d kernel %g, twin %g", groups, nu, i, v, twin[i])
				}
				g, j := i/ostride/4, i/ostride%4
				want := zeroExact(w, a, (3-j)*groups+g)
				var mag float64
				for b := 0; b < k/32; b++ {
					mag += math.Abs(float64(f16(w.Data[(((3-j)*groups+g)*k/32+b)*18:]))) * float64(a.d[b]) * 32 * 127 * 15
				}
				if d := math.Abs(float64(v) - want); d > 1e-6*mag+1e-7 {
					t.Fatalf("groups %d nu %d: row %d = %g, exact %g", groups, nu, (3-j)*groups+g, v, want)
				}
			}
		}
	}
}

// TestMatMulZeroFused checks the decode paths that reach the fused kernel: MatMul of one token
// (with and without a column permutation, row counts with stream tails), and MatMulShared of
// Q4_0Z weights with plain Q4_0 and Q4_K ones sharing the token (the Q4_0Z rows through the
// shared job, bit for bit MatMul's), against the same weights without zero codes (the
// correction pass over float32 corrections, matmul_zero.go): the two differ only in summing
// the zeros' Σx from the quantized token instead of the float one.
func TestMatMulZeroFused(t *testing.T) {
	if !quantVNNI {
		t.Skip("no AVX-512 VNNI: the fused kernel's Go twin is checked by TestRows4PZ")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	for _, sh := range []struct{ n, k, g int }{{64, 256, 128}, {37, 640, 128}, {130, 2048, 256}, {9, 128, 128}} {
		for _, perm := range []bool{false, true} {
			w, _ := randZeroHF(rng, sh.n, sh.k, sh.g, perm)
			plain := *w
			z := *w.Zero
			z.Codes = nil
			plain.Zero = &z
			x := qRandVec(rng, sh.k, 1)
			got, want := make([]float32, sh.n), make([]float32, sh.n)
			if err := MatMul(got, x, w, 1); err != nil {
				t.Fatal(err)
			}
			if err := MatMul(want, x, &plain, 1); err != nil {
				t.Fatal(err)
			}
			for r := range got {
				var mag float32
				for j := 0; j < sh.k; j++ {
					mag += float32(math.Abs(float64(x[j]))) * 0.02
				}
				if d := math.Abs(float64(got[r] - want[r])); d > 0.01*float64(mag) {
					t.Fatalf("[%d %d] g%d perm %v: row %d fused %g, correction pass %g", sh.n, sh.k, sh.g, perm, r, got[r], want[r])
				}
			}
			if perm {
				continue
			}
			q4 := randQuant(t, rng, tensor.Q4_0, 20, sh.k)
			w2, _ := randZeroHF(rng, 45, sh.k, 128, false)
			ws := []*tensor.Tensor{w, q4, w2}
			if sh.k%256 == 0 {
				ws = append(ws, randQuant(t, rng, tensor.Q4_K, 12, sh.k))
			}
			for _, only := range [][]*tensor.Tensor{ws, {w, w2}} {
				outs := make([][]float32, len(only))
				for i, wi := range only {
					outs[i] = make([]float32, wi.Shape[0])
				}
				if err := Default.MatMulShared(outs, x, only, 1); err != nil {
					t.Fatal(err)
				}
				for i, wi := range only {
					one := make([]float32, wi.Shape[0])
					if err := MatMul(one, x, wi, 1); err != nil {
						t.Fatal(err)
					}
					for r := range one {
						if math.Float32bits(one[r]) != math.Float32bits(outs[i][r]) {
							t.Fatalf("[%d %d] MatMulShared of %d weights: weight %d (%s) row %d = %g, MatMul %g", sh.n, sh.k, len(only), i, wi.Type, r, outs[i][r], one[r])
						}
					}
				}
			}
		}
	}
}
