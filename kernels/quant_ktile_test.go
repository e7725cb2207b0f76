// Tests of the AVX2 Q4_K / Q6_K GEMM tiles (quant_ktile.go): assembly against the Go twin,
// the twin against float64, bit-identical rows whatever the tile width, and the whole matmul
// with the twins installed.
package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestTilesKA checks q4KTileA1xT / q6KTileA1xT (T = 1..8; the Go twins where the assembly is
// not installed) for 1, 2, 3 and 8 super-blocks: against the twin within 1e-6·Σ|terms|, the
// twin against float64 of the quantized math within 1e-5·Σ|terms|, every T equal to T = 1 bit
// for bit, and no writes outside the tile.
func TestTilesKA(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for i, nb := range []int{1, 2, 3, 8, 1, 2, 3, 8} {
		q6 := i >= 4
		dt := tensor.Q4_K
		if q6 {
			dt = tensor.Q6_K
		}
		k := nb * 256
		w := randQuant(t, rng, dt, 4, k) // row 3 has a zero block and an outlier
		wf, _ := w.Float32()
		x := qRandVec(rng, 8*k, 1)
		clear(x[2*k : 2*k+256]) // token 2 starts with a zero block
		a := getQ8KActs(8, k)
		a.quantize(Serial, x)
		a.buildRecs(Serial, recPairs)
		rs := len(w.Data) / 4
		for r := 0; r < 4; r++ {
			one := make([]float32, 8)
			for tt := 0; tt < 8; tt++ {
				tilesKA[btoi(q6)][1](&w.Data[r*rs], &a.rec[tt*nb*kRec], nb*kRec, nb, &one[tt], 1)
			}
			for T := 1; T <= 8; T++ {
				got := make([]float32, 8*3)
				want := make([]float32, 8*3)
				tilesKA[btoi(q6)][T](&w.Data[r*rs], &a.rec[0], nb*kRec, nb, &got[0], 3)
				refTileKA(q6, T)(&w.Data[r*rs], &a.rec[0], nb*kRec, nb, &want[0], 3)
				for tt := 0; tt < T; tt++ {
					var ex, mag float64
					for j := 0; j < k; j++ {
						p := float64(wf[r*k+j]) * float64(a.qs[tt*k+j]) * float64(a.d[tt*nb+j/256])
						ex += p
						mag += math.Abs(p)
					}
					g, wnt := got[3*tt], want[3*tt]
					if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
						t.Errorf("%s nb=%d row %d T=%d token %d: asm %g ref %g", dt, nb, r, T, tt, g, wnt)
					}
					if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
						t.Errorf("%s nb=%d row %d T=%d token %d: ref %g exact %g", dt, nb, r, T, tt, wnt, ex)
					}
					if g != one[tt] {
						t.Errorf("%s nb=%d row %d T=%d token %d: %g, with T=1 %g", dt, nb, r, T, tt, g, one[tt])
					}
				}
				for i := range got {
					if (i%3 != 0 || i/3 >= T) && got[i] != 0 {
						t.Fatalf("nb=%d T=%d wrote out of its tile at %d", nb, T, i)
					}
				}
			}
		}
	}
}

// TestMatMulQuantKTilesGo runs the MatMul checks with the AVX2 K-quant tiles replaced by their
// Go twins and switched on (so the tile path is tested on CPUs without AVX2 too).
func TestMatMulQuantKTilesGo(t *testing.T) {
	tk, use, vnni := tilesKA, useTilesKA, quantVNNI
	defer func() { tilesKA, useTilesKA, quantVNNI = tk, use, vnni }()
	tilesKA = refTilesKA()
	useTilesKA, quantVNNI = true, false
	checkMatMulQuant(t)
}

// BenchmarkKTileGEMM compares the AVX2 K-quant tiles ("tiles", 8 tokens per call; "tiles4", 4)
// with one dot product per row and token ("dots", the path before them) on model shapes, m tokens, 1 and 2 threads:
//
//	go test ./kernels -run X -bench KTileGEMM -count 3
func BenchmarkKTileGEMM(b *testing.B) {
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		for _, sh := range [][2]int{{768, 768}, {2048, 768}, {768, 2048}, {2048, 2048}, {5632, 2048}} {
			n, k := sh[0], sh[1]
			w := randQuantFast(b, dt, n, k)
			for _, m := range []int{64, 512} {
				x := qRandVec(rand.New(rand.NewPCG(2, 3)), m*k, 1)
				out := make([]float32, m*n)
				for _, th := range []int{1, 2} {
					p := NewPool(th)
					for _, mode := range []string{"tiles", "tiles4", "dots"} {
						b.Run(fmt.Sprintf("%s/%dx%d/m%d/t%d/%s", dt, n, k, m, th, mode), func(b *testing.B) {
							use, kt := useTilesKA, kaTokens
							useTilesKA = use && mode != "dots"
							if mode == "tiles4" {
								kaTokens = 4
							}
							defer func() { useTilesKA, kaTokens = use, kt }()
							for b.Loop() {
								if err := p.MatMul(out, x, w, m); err != nil {
									b.Fatal(err)
								}
							}
							b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
						})
					}
				}
			}
		}
	}
}

// BenchmarkKTileL1 runs one tile (1 row x T tokens, 8 super-blocks) on data in L1; GMAC per
// second of the thread's CPU time (less disturbed by other processes than wall time).
func BenchmarkKTileL1(b *testing.B) {
	const nb = 8
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		q6 := dt == tensor.Q6_K
		w := randQuantFast(b, dt, 1, nb*256)
		a := getQ8KActs(8, nb*256)
		a.quantize(Serial, qRandVec(rand.New(rand.NewPCG(2, 3)), 8*nb*256, 1))
		a.buildRecs(Serial, recPairs)
		out := make([]float32, 8)
		for T := 1; T <= 8; T++ {
			f := tilesKA[btoi(q6)][T]
			b.Run(fmt.Sprintf("%s/T%d", dt, T), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				for b.Loop() {
					f(&w.Data[0], &a.rec[0], nb*kRec, nb, &out[0], 1)
				}
				b.ReportMetric(float64(T*nb*256)*float64(b.N)/(threadCPU()-c0)/1e9, "GMAC/cpu-s")
			})
		}
	}
}

// TestQuantRowQ8KAVX2 checks the fast Q8_K quantizer (assembly values and scales, word-at-a-time
// sums) bit for bit against quantRowQ8KRef: random rows of 1..5 blocks with a zero block, a
// block whose largest magnitude appears with both signs (the first one decides), tiny values,
// and values rounding to ±127.
func TestQuantRowQ8KAVX2(t *testing.T) {
	if !quantAsm {
		t.Log("no AVX2 kernels installed: quantRowQ8K is quantRowQ8KRef")
		return
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for nb := 1; nb <= 5; nb++ {
		for trial := 0; trial < 20; trial++ {
			x := qRandVec(rng, nb*256, float32(math.Pow(10, float64(trial%7-3))))
			if nb > 1 && trial%4 == 1 {
				clear(x[256:512])
			}
			if trial%4 == 2 {
				x[17], x[3] = -9, 9 // tie: x[3] comes first, so max = +9
			}
			if trial%4 == 3 {
				x[200], x[5] = -2, 2
				x[100] = -2 // first of |x| = 2 is x[5]
			}
			var q1, q2 [5 * 256]int8
			var d1, d2 [5]float32
			var s1, s2 [5 * 16]int16
			var e1, e2 [5 * 8]int16
			quantRowQ8KRef(x, q1[:nb*256], d1[:nb], s1[:nb*16], e1[:nb*8])
			quantRowQ8K(x, q2[:nb*256], d2[:nb], s2[:nb*16], e2[:nb*8])
			if q1 != q2 || d1 != d2 || s1 != s2 || e1 != e2 {
				t.Fatalf("nb=%d trial %d: fast quantizer differs from the reference (d %v vs %v)", nb, trial, d2, d1)
			}
		}
	}
}
