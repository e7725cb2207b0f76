package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantTilesZ checks every VNNI tile shape (1..4 rows x 1..4 tokens) for Q8_0 and Q4_0 over
// 1, 2, 3, 5, 16 and 33 block pairs: the assembly (where the CPU has AVX-512 VNNI) against its
// Go twin within 1e-6·Σ|terms|, the twin against the float64 of the same quantized math within
// 1e-5·Σ|terms|, and no writes outside the tile.
func TestQuantTilesZ(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for qi, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		q4 := qi == 1
		for _, np := range []int{1, 2, 3, 5, 16, 33} {
			k := np * 64
			w := randQuant(t, rng, dt, 4, k)
			rs := len(w.Data) / 4
			x := qRandVec(rng, 4*k, 1)
			x[5] = 0 // a token value of exactly zero, and one block of them
			for j := 64; j < 96 && j < 4*k; j++ {
				x[j] = 0
			}
			a := getQ8Acts(4, k, false)
			a.quantize(Serial, x, false)
			a.prepZ(Serial, q4)
			xs := a.qs
			if q4 {
				xs = a.xz
			}
			for R := 1; R <= 4; R++ {
				for T := 1; T <= 4; T++ {
					got := make([]float32, 4*9)
					want := make([]float32, 4*9)
					tilesZ[qi][R][T](&w.Data[0], rs, &xs[0], k, &a.dz[0], &a.cz[0], np, &got[0], 9)
					refTileZ(q4, R, T)(&w.Data[0], rs, &xs[0], k, &a.dz[0], &a.cz[0], np, &want[0], 9)
					for tt := 0; tt < T; tt++ {
						for r := 0; r < R; r++ {
							ex, mag := exactQ8(q4, w.Data[r*rs:], a.qs[tt*k:], a.d[tt*a.nb:], 2*np)
							g, wnt := got[tt*9+r], want[tt*9+r]
							if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
								t.Errorf("%s np=%d tileZ %dx%d [%d,%d]: asm %g ref %g", dt, np, R, T, r, tt, g, wnt)
							}
							if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
								t.Errorf("%s np=%d tileZ %dx%d [%d,%d]: ref %g exact %g", dt, np, R, T, r, tt, wnt, ex)
							}
						}
					}
					for i := range got {
						if (i%9 >= R || i/9 >= T) && got[i] != 0 {
							t.Fatalf("%s tileZ %dx%d wrote out of its tile at %d", dt, R, T, i)
						}
					}
				}
			}
		}
	}
}

// TestMatMulQuantAVX2 runs the MatMul checks with the VNNI kernels switched off, so the AVX2
// GEMM tiles are tested on CPUs that have both. Without VNNI the AVX2 tiles are the ones
// installed and TestMatMulQuant has tested them, so there is nothing left to do (not a skip:
// nothing goes untested).
func TestMatMulQuantAVX2(t *testing.T) {
	if !quantVNNI {
		t.Log("no VNNI kernels installed: TestMatMulQuant covered the AVX2 path")
		return
	}
	quantVNNI = false
	defer func() { quantVNNI = true }()
	checkMatMulQuant(t)
}

// TestRowsZ checks the VNNI decode kernels (Q8_0 over block pairs, Q4_0 over block quads) on 5
// rows with 1, 2, 3, 5, 16 and 17 units: assembly (where installed) against the Go twin within
// 1e-6·Σ|terms|, the twin against the float64 of the quantized math within 1e-5·Σ|terms|, and
// no write past the last row.
func TestRowsZ(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for qi, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		q4 := qi == 1
		for _, nu := range []int{1, 2, 3, 5, 16, 17} {
			k := nu * 64
			if q4 {
				k = nu * 128
			}
			const rows = 5
			w := randQuant(t, rng, dt, rows, k)
			rs := len(w.Data) / rows
			x := qRandVec(rng, k, 1)
			a := getQ8Acts(1, k, false)
			a.quantize(Serial, x, false)
			a.prepZ(Serial, false)
			xs, dz, cz := a.qs, a.dz, a.cz
			if q4 {
				a.prepQuad()
				xs, dz, cz = a.x4, a.d4, a.c4
			}
			got := make([]float32, rows+1)
			want := make([]float32, rows)
			rowsZ[qi](&w.Data[0], rs, rows, &xs[0], &dz[0], &cz[0], nu, &got[0])
			rowsZRef(q4, w.Data, rs, rows, xs, dz, cz, nu, want)
			for r := 0; r < rows; r++ {
				ex, mag := exactQ8(q4, w.Data[r*rs:], a.qs, a.d, k/32)
				if d := math.Abs(float64(got[r] - want[r])); d > 1e-6*mag+1e-30 {
					t.Errorf("%s nu=%d row %d: asm %g ref %g", dt, nu, r, got[r], want[r])
				}
				if d := math.Abs(float64(want[r]) - ex); d > 1e-5*mag+1e-30 {
					t.Errorf("%s nu=%d row %d: ref %g exact %g", dt, nu, r, want[r], ex)
				}
			}
			if got[rows] != 0 {
				t.Fatalf("%s nu=%d: wrote past the last row", dt, nu)
			}
		}
	}
}

// TestRows4Z checks the four-row VNNI Q8_0 decode kernel on 4, 8 and 12 rows with 1, 2, 3, 5,
// 16 and 17 block pairs: assembly (where installed) against its Go twin within 1e-6·Σ|terms|,
// the twin against the float64 of the quantized math within 1e-5·Σ|terms|, the one-row tail
// kernel bit for bit against the four-row one, and no write past the last row.
func TestRows4Z(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, rows := range []int{4, 8, 12} {
		for _, nu := range []int{1, 2, 3, 5, 16, 17} {
			k := nu * 64
			w := randQuant(t, rng, tensor.Q8_0, rows, k)
			rs := len(w.Data) / rows
			a := getQ8Acts(1, k, false)
			a.quantize(Serial, qRandVec(rng, k, 1), false)
			a.prepZ(Serial, false)
			got := make([]float32, rows+1)
			want := make([]float32, rows)
			rows4Z(&w.Data[0], rs, rows, &a.qs[0], &a.dz[0], &a.fz[0], nu, &got[0])
			rows4ZRef(w.Data, rs, rows, a.qs, a.dz, a.fz, nu, want)
			// The tail kernel, on rows rows-1, rows-2 and rows-3 alone, must give exactly the
			// four-row kernel's results (a row's value never depends on its grouping).
			for _, tail := range []int{1, 2, 3} {
				one := make([]float32, tail+1)
				rows4ZTail(&w.Data[(rows-tail)*rs], rs, tail, &a.qs[0], &a.dz[0], &a.fz[0], nu, &one[0])
				for i := 0; i < tail; i++ {
					if one[i] != got[rows-tail+i] {
						t.Fatalf("rows=%d nu=%d: tail kernel row %d = %g, four-row kernel %g", rows, nu, rows-tail+i, one[i], got[rows-tail+i])
					}
				}
				if one[tail] != 0 {
					t.Fatalf("rows=%d nu=%d: tail kernel wrote past its %d rows", rows, nu, tail)
				}
			}
			for r := 0; r < rows; r++ {
				ex, mag := exactQ8(false, w.Data[r*rs:], a.qs, a.d, k/32)
				if d := math.Abs(float64(got[r] - want[r])); d > 1e-6*mag+1e-30 {
					t.Errorf("rows=%d nu=%d row %d: asm %g ref %g", rows, nu, r, got[r], want[r])
				}
				if d := math.Abs(float64(want[r]) - ex); d > 1e-5*mag+1e-30 {
					t.Errorf("rows=%d nu=%d row %d: ref %g exact %g", rows, nu, r, want[r], ex)
				}
			}
			if got[rows] != 0 {
				t.Fatalf("rows=%d nu=%d: wrote past the last row", rows, nu)
			}
		}
	}
}

// TestTilesKZ checks the Q4_K and Q6_K VNNI kernels (1 row x 1..8 tokens, 1, 2, 3 and 8
// super-blocks):
// assembly (where installed) against the Go twin within 1e-6·Σ|terms|, the twin against the
// float64 of dequantized weights times the quantized tokens within 1e-5·Σ|terms|, and no
// write outside the tile.
func TestTilesKZ(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for i, nb := range []int{1, 2, 3, 8, 1, 2, 3, 8} {
		q6 := i >= 4
		dt := tensor.Q4_K
		if q6 {
			dt = tensor.Q6_K
		}
		k := nb * 256
		w := randQuant(t, rng, dt, 1, k)
		wf, _ := w.Float32()
		x := qRandVec(rng, 8*k, 1)
		a := getQ8KActs(8, k)
		a.quantize(Serial, x)
		a.recs(Serial)
		for T := 1; T <= 8; T++ {
			got := make([]float32, 8*3)
			want := make([]float32, 8*3)
			tilesKZ[btoi(q6)][T](&w.Data[0], &a.rec[0], nb*kRec, nb, &got[0], 3)
			refTileKZ(q6, T)(&w.Data[0], &a.rec[0], nb*kRec, nb, &want[0], 3)
			for tt := 0; tt < T; tt++ {
				var ex, mag float64
				for j := 0; j < k; j++ {
					p := float64(wf[j]) * float64(a.qs[tt*k+j]) * float64(a.d[tt*nb+j/256])
					ex += p
					mag += math.Abs(p)
				}
				g, wnt := got[3*tt], want[3*tt]
				if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
					t.Errorf("%s nb=%d T=%d token %d: asm %g ref %g", dt, nb, T, tt, g, wnt)
				}
				if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
					t.Errorf("%s nb=%d T=%d token %d: ref %g exact %g", dt, nb, T, tt, wnt, ex)
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

// TestSumInt8x32 checks the word-at-a-time block sum against a plain loop on random blocks
// and on the extremes (all -128, all 127, alternating).
func TestSumInt8x32(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	blocks := [][]int8{make([]int8, 32), make([]int8, 32), make([]int8, 32)}
	for i := range 32 {
		blocks[0][i], blocks[1][i] = -128, 127
		blocks[2][i] = int8(127 - 255*(i%2))
	}
	for range 1000 {
		b := make([]int8, 32)
		for i := range b {
			b[i] = int8(rng.IntN(256) - 128)
		}
		blocks = append(blocks, b)
	}
	for _, b := range blocks {
		var want int32
		for _, v := range b {
			want += int32(v)
		}
		if got := sumInt8x32(b); got != want {
			t.Fatalf("sum of %v = %d, want %d", b, got, want)
		}
	}
}
