package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantTileP checks every Q4_0 pair tile (1..2 rows x 1..4 tokens) over 1, 2, 3, 5, 16 and
// 33 block pairs: the assembly (where installed) against its Go twin within 1e-6·Σ|terms|, the
// twin against the float64 of the same quantized math within 1e-5·Σ|terms|, every shape
// bit-identical to the 2x4 one (batch invariance), and no writes outside the tile.
func TestQuantTileP(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	if !usePairs() {
		t.Log("no pair tile assembly installed: checking the twin against the exact sums only")
	}
	for _, np := range []int{1, 2, 3, 5, 16, 33} {
		k := np * 64
		w := randQuant(t, rng, tensor.Q4_0, 2, k)
		rs := len(w.Data) / 2
		x := qRandVec(rng, 4*k, 1)
		x[5] = 0 // a token value of exactly zero, and one block of them
		for j := 64; j < 96 && j < 4*k; j++ {
			x[j] = 0
		}
		a := getQ8Acts(4, k, true)
		a.quantize(Serial, x, true)
		a.prepP(Serial)
		full := make([]float32, 4*9)
		if usePairs() {
			tilesP[2][4](&w.Data[0], rs, &a.xz[0], k, &a.dp[0], &a.cp[0], np, &full[0], 9)
		}
		for R := 1; R <= 2; R++ {
			for T := 1; T <= 4; T++ {
				checkTileP(t, w.Data, rs, a, np, R, T, full)
			}
		}
	}
}

func checkTileP(t *testing.T, w []byte, rs int, a *q8Acts, np, R, T int, full []float32) {
	t.Helper()
	k := np * 64
	asm := refTileP(R, T)
	if usePairs() {
		asm = tilesP[R][T]
	}
	got := make([]float32, 4*9)
	want := make([]float32, 4*9)
	asm(&w[0], rs, &a.xz[0], k, &a.dp[0], &a.cp[0], np, &got[0], 9)
	refTileP(R, T)(&w[0], rs, &a.xz[0], k, &a.dp[0], &a.cp[0], np, &want[0], 9)
	for tt := 0; tt < T; tt++ {
		for r := 0; r < R; r++ {
			if usePairs() && got[tt*9+r] != full[tt*9+r] {
				t.Errorf("np=%d tileP %dx%d [%d,%d] = %g, the 2x4 tile %g", np, R, T, r, tt, got[tt*9+r], full[tt*9+r])
			}
			ex, mag := exactQ8(true, w[r*rs:], a.qs[tt*k:], a.d[tt*a.nb:], 2*np)
			g, wnt := got[tt*9+r], want[tt*9+r]
			if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
				t.Errorf("np=%d tileP %dx%d [%d,%d]: asm %g ref %g", np, R, T, r, tt, g, wnt)
			}
			if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
				t.Errorf("np=%d tileP %dx%d [%d,%d]: ref %g exact %g", np, R, T, r, tt, wnt, ex)
			}
		}
	}
	for i := range got {
		if (i%9 >= R || i/9 >= T) && got[i] != 0 {
			t.Fatalf("tileP %dx%d wrote out of its tile at %d", R, T, i)
		}
	}
}

// TestMatMulQuantPairsGo runs the MatMul checks with the pair tile's Go twin installed (so the
// pair path, its token tails and odd rows are tested on every CPU without VNNI; the quad tiles
// off), and TestMatMulQuantNoPairs with the pair and quad paths off (the block tiles alone).
func TestMatMulQuantPairsGo(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	old, oq, ox := tilesP, q4Toks, x4Toks
	defer func() { tilesP, q4Toks, x4Toks = old, oq, ox }()
	q4Toks, x4Toks = 0, 0 // the pair path (the quad paths have their own tests)
	for R := 1; R <= 2; R++ {
		for T := 1; T <= 4; T++ {
			tilesP[R][T] = refTileP(R, T)
		}
	}
	checkMatMulQuant(t)
	testMatMulInvariant(t)
}

func TestMatMulQuantNoPairs(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	old, oq, ox := tilesP, q4Toks, x4Toks
	defer func() { tilesP, q4Toks, x4Toks = old, oq, ox }()
	tilesP, q4Toks, x4Toks = [3][5]tileFunc{}, 0, 0
	checkMatMulQuant(t)
	testMatMulInvariant(t)
}
