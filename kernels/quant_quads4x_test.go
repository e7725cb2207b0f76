package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantTileX4 checks every Q4_0 cross-interleaved quad tile (one row x 1..8 tokens) over 1,
// 2, 3, 5 and 17 block quads: the assembly (where installed) against its Go twin within
// 1e-6·Σ|terms|, the twin against the float64 of the same quantized math within 1e-5·Σ|terms|,
// every T bit-identical to T = 8 (batch invariance), and no writes outside the tile.
func TestQuantTileX4(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	asm := tilesX4[1] != nil
	if !asm {
		t.Log("no Q4_0 cross-interleaved quad tile assembly installed: checking the twin against the exact sums only")
	}
	for _, nq := range []int{1, 2, 3, 5, 17} {
		k := nq * 128
		w := randQuant(t, rng, tensor.Q4_0, 1, k)
		if nq > 1 {
			w.Data[18*5], w.Data[18*5+1] = 0, 0 // a block with scale 0
		}
		x := qRandVec(rng, 8*k, 1)
		x[3] = 0
		for j := 128; j < 160 && j < 8*k; j++ {
			x[j] = 0
		}
		a := getQ8Acts(8, k, true)
		a.quantize(Serial, x, true)
		a.prepX4(Serial)
		sq := (*float32)(unsafe.Pointer(&a.sx[0]))
		full := make([]float32, 8*3)
		if asm {
			tilesX4[8](&w.Data[0], len(w.Data), &a.xq[0], k, sq, nil, nq, &full[0], 3)
		}
		for T := 1; T <= 8; T++ {
			f := refTileX4(T)
			if asm {
				f = tilesX4[T]
			}
			got := make([]float32, 8*3)
			want := make([]float32, 8*3)
			f(&w.Data[0], len(w.Data), &a.xq[0], k, sq, nil, nq, &got[0], 3)
			refTileX4(T)(&w.Data[0], len(w.Data), &a.xq[0], k, sq, nil, nq, &want[0], 3)
			for tt := 0; tt < T; tt++ {
				g, wnt := got[tt*3], want[tt*3]
				if asm && g != full[tt*3] {
					t.Errorf("nq=%d tileX4 1x%d token %d = %g, the 1x8 tile %g", nq, T, tt, g, full[tt*3])
				}
				ex, mag := exactQ8(true, w.Data, a.qs[tt*k:], a.d[tt*a.nb:], 4*nq)
				if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
					t.Errorf("nq=%d tileX4 1x%d token %d: asm %g ref %g", nq, T, tt, g, wnt)
				}
				if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
					t.Errorf("nq=%d tileX4 1x%d token %d: ref %g exact %g", nq, T, tt, wnt, ex)
				}
			}
			for i := range got {
				if (i%3 != 0 || i/3 >= T) && got[i] != 0 {
					t.Fatalf("tileX4 1x%d wrote out of its tile at %d", T, i)
				}
			}
		}
	}
}

// TestMatMulQuantX4Go runs the MatMul and invariance checks with the cross-interleaved Q4_0
// tile's Go twin installed, and TestMatMulQuantX4 with the installed tiles, for several token
// counts.
func TestMatMulQuantX4Go(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	old, ox := tilesX4, x4Toks
	defer func() { tilesX4, x4Toks = old, ox }()
	for T := 1; T <= 8; T++ {
		tilesX4[T] = refTileX4(T)
	}
	for _, T := range []int{3, 8} {
		x4Toks = T
		checkMatMulQuant(t)
		testMatMulInvariant(t)
	}
}

func TestMatMulQuantX4(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	ox := x4Toks
	defer func() { x4Toks = ox }()
	for _, T := range []int{1, 5, 8} {
		x4Toks = T
		checkMatMulQuant(t)
		testMatMulInvariant(t)
	}
}
