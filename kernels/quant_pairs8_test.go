package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// p8Shapes lists the generated Q8_0 pair tile shapes (rows, tokens).
func p8Shapes() (s [][2]int) {
	for T := 1; T <= 8; T++ {
		s = append(s, [2]int{1, T})
	}
	for T := 1; T <= 3; T++ {
		s = append(s, [2]int{2, T})
	}
	return
}

// TestQuantTileP8 checks every Q8_0 pair tile over 1, 2, 3, 5, 16 and 33 block pairs: the
// assembly (where installed) against its Go twin within 1e-6·Σ|terms|, the twin against the
// float64 of the same quantized math within 1e-5·Σ|terms|, every shape bit-identical to the
// 1x8 one (batch invariance), and no writes outside the tile. Weights include -128 (the
// largest |w| the sign trick sees) and a zero-scale block.
func TestQuantTileP8(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	if !usePairs8() {
		t.Log("no Q8_0 pair tile assembly installed: checking the twin against the exact sums only")
	}
	for _, np := range []int{1, 2, 3, 5, 16, 33} {
		k := np * 64
		w := randQuant(t, rng, tensor.Q8_0, 2, k)
		rs := len(w.Data) / 2
		w.Data[2+5] = 0x80                 // w = -128 in row 0, block 0
		w.Data[rs+34*(np*2-1)+2+31] = 0x80 // and in row 1's last block
		if np > 1 {
			w.Data[34], w.Data[35] = 0, 0 // row 0, block 1: scale 0
		}
		x := qRandVec(rng, 8*k, 1)
		x[5] = 0
		for j := 64; j < 96 && j < 8*k; j++ {
			x[j] = 0
		}
		a := getQ8Acts(8, k, false)
		a.quantize(Serial, x, false)
		a.prepP8(Serial)
		full := make([]float32, 8*9)
		if usePairs8() {
			tilesP8[1][8](&w.Data[0], rs, &a.qs[0], k, &a.d8[0], nil, np, &full[0], 9)
			tilesP8[1][8](&w.Data[rs], rs, &a.qs[0], k, &a.d8[0], nil, np, &full[1], 9)
		}
		for _, sh := range p8Shapes() {
			checkTileP8(t, w.Data, rs, a, np, sh[0], sh[1], full)
		}
	}
}

func checkTileP8(t *testing.T, w []byte, rs int, a *q8Acts, np, R, T int, full []float32) {
	t.Helper()
	k := np * 64
	asm := refTileP8(R, T)
	if usePairs8() {
		asm = tilesP8[R][T]
	}
	got := make([]float32, 8*9)
	want := make([]float32, 8*9)
	asm(&w[0], rs, &a.qs[0], k, &a.d8[0], nil, np, &got[0], 9)
	refTileP8(R, T)(&w[0], rs, &a.qs[0], k, &a.d8[0], nil, np, &want[0], 9)
	for tt := 0; tt < T; tt++ {
		for r := 0; r < R; r++ {
			if usePairs8() && got[tt*9+r] != full[tt*9+r] {
				t.Errorf("np=%d tileP8 %dx%d [%d,%d] = %g, the 1x8 tile %g", np, R, T, r, tt, got[tt*9+r], full[tt*9+r])
			}
			ex, mag := exactQ8(false, w[r*rs:], a.qs[tt*k:], a.d[tt*a.nb:], 2*np)
			g, wnt := got[tt*9+r], want[tt*9+r]
			if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
				t.Errorf("np=%d tileP8 %dx%d [%d,%d]: asm %g ref %g", np, R, T, r, tt, g, wnt)
			}
			if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
				t.Errorf("np=%d tileP8 %dx%d [%d,%d]: ref %g exact %g", np, R, T, r, tt, wnt, ex)
			}
		}
	}
	for i := range got {
		if (i%9 >= R || i/9 >= T) && got[i] != 0 {
			t.Fatalf("tileP8 %dx%d wrote out of its tile at %d", R, T, i)
		}
	}
}

// TestMatMulQuantPairs8Go runs the MatMul and invariance checks with the Q8_0 pair tile's Go
// twin installed (so the pair path, its token tails and odd rows are tested on every CPU
// without VNNI), for both tile shapes matmulP8 can run.
func TestMatMulQuantPairs8Go(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	old, oR, oT, oq := tilesP8, p8Rows, p8Toks, h8Toks
	defer func() { tilesP8, p8Rows, p8Toks, h8Toks = old, oR, oT, oq }()
	h8Toks = 0 // the half-interleaved tiles would take these shapes
	for _, sh := range p8Shapes() {
		tilesP8[sh[0]][sh[1]] = refTileP8(sh[0], sh[1])
	}
	for _, sh := range [][2]int{{1, 8}, {2, 3}} {
		p8Rows, p8Toks = sh[0], sh[1]
		checkMatMulQuant(t)
		testMatMulInvariant(t)
	}
}

// TestMatMulQuantPairs8Shapes runs the MatMul and invariance checks with the installed tiles
// for both tile shapes matmulP8 can run.
func TestMatMulQuantPairs8Shapes(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	oR, oT, oq := p8Rows, p8Toks, h8Toks
	defer func() { p8Rows, p8Toks, h8Toks = oR, oT, oq }()
	h8Toks = 0 // the half-interleaved tiles would take these shapes
	for _, sh := range [][2]int{{1, 8}, {2, 3}, {1, 4}} {
		p8Rows, p8Toks = sh[0], sh[1]
		checkMatMulQuant(t)
		testMatMulInvariant(t)
	}
}

// BenchmarkQ8TileL1: one tile call over 2048 values in L1 (the Q8_0 block tile 2x4 against the
// pair tiles and the half-interleaved pair tiles, p9), GOP per second of the thread's CPU time.
func BenchmarkQ8TileL1(b *testing.B) {
	const k = 2048
	rng := rand.New(rand.NewPCG(4, 5))
	w := randQuant(b, rng, tensor.Q8_0, 2, k)
	rs := len(w.Data) / 2
	a := getQ8Acts(8, k, false)
	a.quantize(Serial, qRandVec(rng, 8*k, 1), false)
	a.prepP8(Serial)
	a.prepH8(Serial)
	out := make([]float32, 8*8)
	for r := 0; r < 3; r++ {
		for _, sh := range [][3]int{{0, 2, 4}, {8, 1, 8}, {8, 2, 3}, {8, 1, 4}, {9, 1, 8}, {9, 1, 6}} {
			R, T := sh[1], sh[2]
			f := tilesP8[R][T]
			switch sh[0] {
			case 0:
				f = quantTiles[0][R][T]
			case 9:
				f = tilesH8[T]
			}
			if f == nil {
				b.Skip("no assembly")
			}
			b.Run(fmt.Sprintf("p%d_%dx%d/r%d", sh[0], R, T, r), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for b.Loop() {
					switch sh[0] {
					case 8:
						f(&w.Data[0], rs, &a.qs[0], k, &a.d8[0], nil, k/64, &out[0], 8)
					case 9:
						f(&w.Data[0], rs, &a.xz[0], k, &a.dp[0], nil, k/64, &out[0], 8)
					default:
						f(&w.Data[0], rs, &a.qs[0], k, &a.d[0], nil, k/32, &out[0], 8)
					}
				}
				b.ReportMetric(2*float64(R*T*k)*float64(b.N)/(threadCPU()-cpu0)/1e9, "GOP/thread-s")
			})
		}
	}
}
