package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantTileH8 checks every Q8_0 half-interleaved tile (one row x 1..8 tokens) over 1, 2, 3, 5 and 33
// block pairs: the assembly (where installed) against its Go twin within 1e-6·Σ|terms|, the
// twin against the float64 of the same quantized math within 1e-5·Σ|terms|, every T
// bit-identical to T = 8 (batch invariance), and no writes outside the tile. Weights include
// -128 (the largest |w| the sign trick sees) and a zero-scale block.
func TestQuantTileH8(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	asm := tilesH8[1] != nil
	if !asm {
		t.Log("no Q8_0 half-interleaved tile assembly installed: checking the twin against the exact sums only")
	}
	for _, np := range []int{1, 2, 3, 5, 33} {
		k := np * 64
		w := randQuant(t, rng, tensor.Q8_0, 1, k)
		w.Data[2+5] = 0x80              // w = -128 in block 0
		w.Data[34*(np*2-1)+2+31] = 0x80 // and in the last block
		if np > 1 {
			w.Data[34*3], w.Data[34*3+1] = 0, 0 // block 3: scale 0
		}
		x := qRandVec(rng, 8*k, 1)
		x[3] = 0
		for j := 64; j < 96 && j < 8*k; j++ {
			x[j] = 0
		}
		a := getQ8Acts(8, k, false)
		a.quantize(Serial, x, false)
		a.prepH8(Serial)
		full := make([]float32, 8*3)
		if asm {
			tilesH8[8](&w.Data[0], len(w.Data), &a.xz[0], k, &a.dp[0], nil, np, &full[0], 3)
		}
		for T := 1; T <= 8; T++ {
			f := refTileH8(T)
			if asm {
				f = tilesH8[T]
			}
			got := make([]float32, 8*3)
			want := make([]float32, 8*3)
			f(&w.Data[0], len(w.Data), &a.xz[0], k, &a.dp[0], nil, np, &got[0], 3)
			refTileH8(T)(&w.Data[0], len(w.Data), &a.xz[0], k, &a.dp[0], nil, np, &want[0], 3)
			for tt := 0; tt < T; tt++ {
				g, wnt := got[tt*3], want[tt*3]
				if asm && g != full[tt*3] {
					t.Errorf("np=%d tileH8 1x%d token %d = %g, the 1x8 tile %g", np, T, tt, g, full[tt*3])
				}
				ex, mag := exactQ8(false, w.Data, a.qs[tt*k:], a.d[tt*a.nb:], 2*np)
				if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
					t.Errorf("np=%d tileH8 1x%d token %d: asm %g ref %g", np, T, tt, g, wnt)
				}
				if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
					t.Errorf("np=%d tileH8 1x%d token %d: ref %g exact %g", np, T, tt, wnt, ex)
				}
			}
			for i := range got {
				if (i%3 != 0 || i/3 >= T) && got[i] != 0 {
					t.Fatalf("tileH8 1x%d wrote out of its tile at %d", T, i)
				}
			}
		}
	}
}

// TestMatMulQuantH8Go runs the MatMul and invariance checks with the Q8_0 half-interleaved tile's Go
// twin installed (the half-interleaved path, its token groups and rows on every CPU without VNNI), and
// TestMatMulQuantH8 with the installed tiles, for several token counts.
func TestMatMulQuantH8Go(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	old, oq := tilesH8, h8Toks
	defer func() { tilesH8, h8Toks = old, oq }()
	for T := 1; T <= 8; T++ {
		tilesH8[T] = refTileH8(T)
	}
	for _, T := range []int{3, 8} {
		h8Toks = T
		checkMatMulQuant(t)
		testMatMulInvariant(t)
	}
}

func TestMatMulQuantH8(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	oq := h8Toks
	defer func() { h8Toks = oq }()
	for _, T := range []int{1, 5, 8} {
		h8Toks = T
		checkMatMulQuant(t)
		testMatMulInvariant(t)
	}
}
