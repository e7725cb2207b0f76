package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantTileQ4 checks every Q4_0 quad tile (one row x 1..7 tokens) over 1, 2, 3, 5 and 17
// block quads: the assembly (where installed) against its Go twin within 1e-6·Σ|terms|, the twin
// against the float64 of the same quantized math within 1e-5·Σ|terms|, every T bit-identical to
// T = 7 (batch invariance), and no writes outside the tile.
func TestQuantTileQ4(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	asm := tilesQ4[1] != nil
	if !asm {
		t.Log("no Q4_0 quad tile assembly installed: checking the twin against the exact sums only")
	}
	for _, nq := range []int{1, 2, 3, 5, 17} {
		k := nq * 128
		w := randQuant(t, rng, tensor.Q4_0, 1, k)
		if nq > 1 {
			w.Data[18*5], w.Data[18*5+1] = 0, 0 // a block with scale 0
		}
		x := qRandVec(rng, 7*k, 1)
		x[3] = 0
		for j := 128; j < 160 && j < 7*k; j++ {
			x[j] = 0
		}
		a := getQ8Acts(7, k, true)
		a.quantize(Serial, x, true)
		a.prepQ4(Serial)
		sq := (*float32)(unsafe.Pointer(&a.sq[0]))
		full := make([]float32, 7*3)
		if asm {
			tilesQ4[7](&w.Data[0], len(w.Data), &a.xz[0], k, sq, nil, nq, &full[0], 3)
		}
		for T := 1; T <= 7; T++ {
			f := refTileQ4(T)
			if asm {
				f = tilesQ4[T]
			}
			got := make([]float32, 7*3)
			want := make([]float32, 7*3)
			f(&w.Data[0], len(w.Data), &a.xz[0], k, sq, nil, nq, &got[0], 3)
			refTileQ4(T)(&w.Data[0], len(w.Data), &a.xz[0], k, sq, nil, nq, &want[0], 3)
			for tt := 0; tt < T; tt++ {
				g, wnt := got[tt*3], want[tt*3]
				if asm && g != full[tt*3] {
					t.Errorf("nq=%d tileQ4 1x%d token %d = %g, the 1x7 tile %g", nq, T, tt, g, full[tt*3])
				}
				ex, mag := exactQ8(true, w.Data, a.qs[tt*k:], a.d[tt*a.nb:], 4*nq)
				if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
					t.Errorf("nq=%d tileQ4 1x%d token %d: asm %g ref %g", nq, T, tt, g, wnt)
				}
				if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
					t.Errorf("nq=%d tileQ4 1x%d token %d: ref %g exact %g", nq, T, tt, wnt, ex)
				}
			}
			for i := range got {
				if (i%3 != 0 || i/3 >= T) && got[i] != 0 {
					t.Fatalf("tileQ4 1x%d wrote out of its tile at %d", T, i)
				}
			}
		}
	}
}

// TestMatMulQuantQuads4Go runs the MatMul and invariance checks with the Q4_0 quad tile's Go
// twin installed (the quad path, its token groups and rows on every CPU without VNNI), and
// TestMatMulQuantQuads4 with the installed tiles, for several token counts.
func TestMatMulQuantQuads4Go(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	old, oq, ox := tilesQ4, q4Toks, x4Toks
	defer func() { tilesQ4, q4Toks, x4Toks = old, oq, ox }()
	x4Toks = 0 // the quad path (the cross-interleaved one has its own tests)
	for T := 1; T <= 7; T++ {
		tilesQ4[T] = refTileQ4(T)
	}
	for _, T := range []int{3, 7} {
		q4Toks = T
		checkMatMulQuant(t)
		testMatMulInvariant(t)
	}
}

func TestMatMulQuantQuads4(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	oq, ox := q4Toks, x4Toks
	defer func() { q4Toks, x4Toks = oq, ox }()
	x4Toks = 0
	for _, T := range []int{1, 4, 7} {
		q4Toks = T
		checkMatMulQuant(t)
		testMatMulInvariant(t)
	}
}
