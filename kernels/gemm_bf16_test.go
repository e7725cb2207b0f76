// This file compares GemmBF16 on every micro-kernel this CPU has (AVX-512 BF16, AVX2+FMA,
// plain Go), with the AVX-512 converters on and off and with weights read from bf16 copies,
// against the plain-Go GemmBF16Ref on odd shapes, every transpose combination and
// accumulation. Tolerance: 1e-5 · Σ_p |a_ip·b_pj| over the bf16-rounded operands (the two add
// the same exact products, blocked differently).
package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestBF16Round(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(1)), 0x7f80},
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // max f32 rounds to +Inf
	}
	for _, c := range cases {
		if got := BF16Round(c.in); got != c.want {
			t.Errorf("BF16Round(%#x) = %#x, want %#x", math.Float32bits(c.in), got, c.want)
		}
	}
	if h := BF16Round(float32(math.NaN())); h&0x7f80 != 0x7f80 || h&0x7f == 0 {
		t.Errorf("NaN rounds to %#x", h)
	}
}

// bf16Paths runs f on every (kernel, converter) combination this CPU has.
func bf16Paths(t *testing.T, f func(t *testing.T)) {
	savedK, savedC := bf16Active, bf16Convert
	defer func() { bf16Active, bf16Convert = savedK, savedC }()
	ks := []bf16Kernel{bf16KernelGo}
	if useBF16AVX2 {
		ks = append(ks, bf16KernelAVX)
	}
	if useBF16Asm {
		ks = append(ks, bf16Kernel512)
	}
	if useAMXBF16 {
		ks = append(ks, bf16KernelAMX)
	}
	for _, k := range ks {
		for _, conv := range []bool{false, true} {
			if conv && !useBF16Asm {
				continue
			}
			bf16Active, bf16Convert = k, conv
			t.Run(fmt.Sprintf("%s/convert=%v", k.name, conv), f)
		}
	}
}

func checkGemmBF16(t *testing.T, p *Pool, r *rand.Rand, m, n, k int, ta, tb, acc, cached bool) {
	t.Helper()
	a, b := gemmOperand(r, m, k, ta), gemmOperand(r, k, n, tb)
	ldc := n + r.IntN(2)
	c0 := make([]float32, m*ldc)
	for i := range c0 {
		c0[i] = float32(r.NormFloat64())
	}
	pool := p
	if cached {
		pool = NewPool(p.workers)
		pool.SetBF16(NewBF16Weights(pool, b.Data))
	}
	got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
	pool.GemmBF16(m, n, k, a, b, got, ldc, acc)
	GemmBF16Ref(m, n, k, a, b, want, ldc, acc)
	rd := func(x float32) float64 { return float64(BF16ToF32(BF16Round(x))) }
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			bound := math.Abs(float64(c0[i*ldc+j]))
			for q := 0; q < k; q++ {
				bound += math.Abs(rd(a.at(i, q)) * rd(b.at(q, j)))
			}
			if d := math.Abs(float64(got[i*ldc+j] - want[i*ldc+j])); d > 1e-5*bound+1e-30 || math.IsNaN(d) {
				t.Fatalf("m=%d n=%d k=%d tA=%v tB=%v acc=%v cached=%v: C[%d][%d] = %v, reference %v",
					m, n, k, ta, tb, acc, cached, i, j, got[i*ldc+j], want[i*ldc+j])
			}
		}
		for j := n; j < ldc; j++ {
			if got[i*ldc+j] != c0[i*ldc+j] {
				t.Fatalf("m=%d n=%d k=%d: padding C[%d][%d] overwritten", m, n, k, i, j)
			}
		}
	}
}

func TestGemmBF16MatchesRef(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {8, 32, 16}, {9, 33, 17}, {16, 64, 32}, {37, 70, 300}, {150, 40, 48}, {5, 200, 33}}
	bf16Paths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, workers := range []int{1, 3} {
			p := NewPool(workers)
			for _, s := range shapes {
				for _, ta := range []bool{false, true} {
					for _, tb := range []bool{false, true} {
						for _, acc := range []bool{false, true} {
							checkGemmBF16(t, p, r, s[0], s[1], s[2], ta, tb, acc, false)
							checkGemmBF16(t, p, r, s[0], s[1], s[2], ta, tb, acc, true)
						}
					}
				}
			}
		}
	})
}

// TestGemmBF16Deterministic: the same product with 1 and 3 workers is bit-identical.
func TestGemmBF16Deterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b := gemmOperand(r, 200, 300, false), gemmOperand(r, 300, 130, true)
	c1, c3 := make([]float32, 200*130), make([]float32, 200*130)
	NewPool(1).GemmBF16(200, 130, 300, a, b, c1, 130, false)
	NewPool(3).GemmBF16(200, 130, 300, a, b, c3, 130, false)
	for i := range c1 {
		if math.Float32bits(c1[i]) != math.Float32bits(c3[i]) {
			t.Fatalf("C[%d]: 1 worker %v, 3 workers %v", i, c1[i], c3[i])
		}
	}
}

// TestPoolBF16Mode: a pool in bf16 mode runs Gemm through GemmBF16 (when the CPU has a kernel),
// and its result stays within bf16 rounding of the f32 product.
func TestPoolBF16Mode(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m, n, k := 64, 96, 256
	a, b := gemmOperand(r, m, k, false), gemmOperand(r, k, n, true)
	f32, bf, want := make([]float32, m*n), make([]float32, m*n), make([]float32, m*n)
	p := NewPool(2)
	p.Gemm(m, n, k, a, b, f32, n, false)
	p.SetBF16(NewBF16Weights(p, b.Data))
	p.Gemm(m, n, k, a, b, bf, n, false)
	p.SetBF16(nil)
	GemmBF16Ref(m, n, k, a, b, want, n, false)
	var maxRel float64
	for i := range bf {
		if BF16Fast() && math.Abs(float64(bf[i]-want[i])) > 1e-4*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("bf16 mode C[%d] = %v, GemmBF16Ref %v", i, bf[i], want[i])
		}
		maxRel = max(maxRel, math.Abs(float64(bf[i]-f32[i]))/math.Sqrt(float64(k)))
	}
	if maxRel > 0.05 {
		t.Fatalf("bf16 product too far from f32: %v", maxRel)
	}
}

func BenchmarkGemmBF16vsF32(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	m, n, k := 4096, 640, 256
	x, w := gemmOperand(r, m, k, false), gemmOperand(r, k, n, true)
	c := make([]float32, m*n)
	p := NewPool(1)
	b.Run("f32", func(b *testing.B) {
		for range b.N {
			p.Gemm(m, n, k, x, w, c, n, false)
		}
		b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("bf16", func(b *testing.B) {
		q := NewPool(1)
		q.SetBF16(NewBF16Weights(q, w.Data))
		for range b.N {
			q.Gemm(m, n, k, x, w, c, n, false)
		}
		b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
