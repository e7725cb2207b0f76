package kernels

import (
	"math"
	"math/big"
	"math/rand"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestPrepackF16MatchesRef checks that MatMul, MatMulShared and MatMulInvariant (one row at a
// time) on weights registered with PrepackF16 (the broadcast kernels over their packs) give
// bit for bit the plain-Go twin f16BcastRef, on the AVX2 and (where the CPU has it) the
// AVX-512 kernels, for m across the 6- and 8-row tile remainders and both
// sides of gemmDirectMaxM, n across panel (16), kernel group and block (192) tails and k
// across the pack's k block (512), on 1 and 3 workers (the first weight packed on 3); that
// they are within the float tolerance of the float64 product; and that a weight whose data
// was replaced is not served from its old pack.
func TestPrepackF16MatchesRef(t *testing.T) {
	if !useFloatAsm {
		t.Skip("no AVX2/FMA/F16C")
	}
	defer func(z bool) { useAVX512 = z }(useAVX512)
	fams := []bool{false} // the AVX2 kernels, and the AVX-512 ones where the CPU has them
	if useAVX512 {
		fams = append(fams, true)
	}
	for _, z := range fams {
		useAVX512 = z
		t.Run(map[bool]string{false: "avx2", true: "avx512"}[z], testPrepackF16MatchesRef)
	}
}

func testPrepackF16MatchesRef(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	p3 := NewPool(3)
	for _, s := range [][3]int{{2, 4, 8}, {3, 4, 8}, {4, 5, 16}, {5, 7, 17}, {6, 8, 520}, {7, 13, 1030},
		{9, 196, 64}, {1, 80, 33}, {2, 48, 300}, {12, 64, 256}, {64, 200, 768}, {65, 389, 1037}, {70, 9, 7}, {100, 400, 2048},
		{8, 48, 9}, {11, 240, 515}, {15, 112, 40}, {17, 33, 1025}, {23, 577, 130}} {
		m, n, k := s[0], s[1], s[2]
		x := randVec(r, m*k, 1)
		var ws []*tensor.Tensor
		var want [][]float32
		for range 2 {
			w, err := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
			if err != nil {
				t.Fatal(err)
			}
			ok := PrepackF16(w)
			if ok != (n >= 4 && k >= 8) {
				t.Fatalf("n=%d k=%d: PrepackF16 = %v", n, k, ok)
			}
			defer DropPackF16(w)
			ws = append(ws, w)
			o := make([]float32, m*n)
			if ok {
				f16BcastRef(o, x, f16Words(w.Data, n, k), m, n, k)
			} else {
				gemmDirect(Serial, o, x, tensor.F16, w.Data, m, n, k)
			}
			checkF16Tolerance(t, o, x, w, m, n, k)
			want = append(want, o)
		}
		if ws[0].Shape[0] >= 4 && ws[0].Shape[1] >= 8 && f16PackOf(p3, ws[0]) == nil {
			t.Fatalf("n=%d k=%d: no pack", n, k)
		}
		for _, p := range []*Pool{Serial, p3} {
			check := func(what string, got, want []float32) {
				t.Helper()
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("m=%d n=%d k=%d workers=%d %s: out[%d,%d] = %v, want %v", m, n, k, p.Workers(), what, i/n, i%n, got[i], want[i])
					}
				}
			}
			nan := func() []float32 {
				o := make([]float32, m*n)
				for i := range o {
					o[i] = float32(math.NaN()) // the GEMM must overwrite, not accumulate
				}
				return o
			}
			if m > 1 { // one row in MatMul is decode's GEMV (its own order)
				got := nan()
				if err := p.MatMul(got, x, ws[0], m); err != nil {
					t.Fatal(err)
				}
				check("MatMul", got, want[0])
				outs := [][]float32{nan(), nan()}
				if err := p.MatMulShared(outs, x, ws, m); err != nil {
					t.Fatal(err)
				}
				check("MatMulShared[0]", outs[0], want[0])
				check("MatMulShared[1]", outs[1], want[1])
			}
			got := nan()
			for i := 0; i < m; i++ {
				if err := p.MatMulInvariant(got[i*n:(i+1)*n], x[i*k:(i+1)*k], ws[1], 1); err != nil {
					t.Fatal(err)
				}
			}
			check("MatMulInvariant m=1", got, want[1])
		}
	}

	// A weight whose data was replaced is not served from its old pack.
	m, n, k := 8, 16, 64
	x := randVec(r, m*k, 1)
	w, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
	defer DropPackF16(w)
	PrepackF16(w)
	got := make([]float32, m*n)
	Serial.MatMul(got, x, w, m)
	w2, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
	w.Data = w2.Data
	want := make([]float32, m*n)
	gemmDirect(Serial, want, x, tensor.F16, w.Data, m, n, k)
	Serial.MatMul(got, x, w, m)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("replaced data: out[%d] = %v, want %v (stale pack)", i, got[i], want[i])
		}
	}
}

// checkF16Tolerance checks out (m x n) against the float64 product of x and the F16 weight w:
// |out - exact| <= 1e-5·Σ|x·w| + 1e-7, the float kernels' bound.
func checkF16Tolerance(t *testing.T, out, x []float32, w *tensor.Tensor, m, n, k int) {
	t.Helper()
	ws := f16Words(w.Data, n, k)
	for i := 0; i < m; i++ {
		for o := 0; o < n; o++ {
			var s, a float64
			for c := 0; c < k; c++ {
				v := float64(x[i*k+c]) * float64(tensor.F16ToF32(ws[o*k+c]))
				s, a = s+v, a+math.Abs(v)
			}
			if d := math.Abs(float64(out[i*n+o]) - s); d > 1e-5*a+1e-7 {
				t.Fatalf("m=%d n=%d k=%d: out[%d,%d] = %v, exact %v", m, n, k, i, o, out[i*n+o], s)
			}
		}
	}
}

// TestFmaRound32 checks fmaRound32 (the twin's FMA) against a*b + c computed exactly with
// math/big and rounded once to float32, on random operands and on sums that cancel or land
// half-way between two float32 values, where rounding twice would differ.
func TestFmaRound32(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	exact := func(a, b, c float32) float32 {
		p := new(big.Float).SetPrec(200).Mul(big.NewFloat(float64(a)), big.NewFloat(float64(b)))
		p.Add(p, big.NewFloat(float64(c)))
		f, _ := p.Float32()
		return f
	}
	for i := 0; i < 200000; i++ {
		a := float32(r.NormFloat64() * math.Pow(2, float64(r.Intn(40)-20)))
		b := float32(r.NormFloat64())
		c := float32(r.NormFloat64() * math.Pow(2, float64(r.Intn(40)-20)))
		switch i % 4 {
		case 1:
			c = -a * b // cancellation
		case 2: // c odd and a*b = half its ulp - 2^-64: float64 rounds the sum to the tie
			a, b = float32(1+math.Ldexp(1, -20)), float32(math.Ldexp(1-math.Ldexp(1, -20), -24))
			c = 1 + float32(math.Ldexp(float64(2*r.Intn(1<<22)+1), -23))
		case 3:
			b = float32(math.Ldexp(1, -24-r.Intn(40)))
		}
		if got, want := fmaRound32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fmaRound32(%g, %g, %g) = %g, exact %g", a, b, c, got, want)
		}
	}
}
