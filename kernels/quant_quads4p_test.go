package kernels

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantTileQ4P checks every packed Q4_0 quad tile (one row x 1..8 tokens) over 1, 2, 3, 5
// and 17 quads bit for bit against the cross-interleaved tile's twin refTileX4 on the stored
// row (so the packs change no result), that unpackQ4Row inverts packQ4Row, and no writes
// outside the tile.
func TestQuantTileQ4P(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, nq := range []int{1, 2, 3, 5, 17} {
		k := nq * 128
		w := randQuant(t, rng, tensor.Q4_0, 1, k)
		if nq > 1 {
			w.Data[18*5], w.Data[18*5+1] = 0, 0 // block 5: scale 0
		}
		pw := make([]byte, nq*q4PackQuad)
		packQ4Row(pw, w.Data)
		back := make([]byte, len(w.Data))
		unpackQ4Row(back, pw)
		if !bytes.Equal(back, w.Data) {
			t.Fatalf("nq=%d: unpackQ4Row(packQ4Row(row)) differs from the row", nq)
		}
		x := qRandVec(rng, 8*k, 1)
		a := getQ8Acts(8, k, true)
		a.quantize(Serial, x, true)
		a.prepX4(Serial)
		xd := (*float32)(unsafe.Pointer(&a.sx[0]))
		for T := 1; T <= 8; T++ {
			want := make([]float32, 8*3)
			refTileX4(T)(&w.Data[0], len(w.Data), &a.xq[0], k, xd, nil, nq, &want[0], 3)
			tiles := []tileFunc{refTileQ4P(T)}
			if tilesQ4P[T] != nil {
				tiles = append(tiles, tilesQ4P[T])
			}
			for i, f := range tiles {
				got := make([]float32, 8*3)
				f(&pw[0], len(pw), &a.xq[0], k, xd, nil, nq, &got[0], 3)
				for j := range got {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("nq=%d tile %d (0 twin, 1 asm) 1x%d at %d: %g, X4 twin on the row %g", nq, i, T, j, got[j], want[j])
					}
				}
			}
		}
	}
}
