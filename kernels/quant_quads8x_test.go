package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantTileQ8X checks every packed Q8_0 quad tile (one row x 1..8 tokens) over 1, 2, 3, 5
// and 17 quads: the assembly (where installed) bit-identical to its Go twin, the twin against
// the float64 of the same quantized math within 1e-5·Σ|terms|, every T bit-identical to T = 8
// (batch invariance), and no writes outside the tile. Weights include -128 (the largest |w|
// the sign trick sees) and a zero-scale block.
func TestQuantTileQ8X(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	asm := tilesQ8X[1] != nil
	if !asm {
		t.Log("no packed Q8_0 tile assembly installed: checking the twin against the exact sums only")
	}
	for _, nq := range []int{1, 2, 3, 5, 17} {
		k := nq * 128
		w := randQuant(t, rng, tensor.Q8_0, 1, k)
		w.Data[2+5] = 0x80              // w = -128 in block 0
		w.Data[34*(nq*4-1)+2+31] = 0x80 // and in the last block
		if nq > 1 {
			w.Data[34*5], w.Data[34*5+1] = 0, 0 // block 5: scale 0
		}
		pw := make([]byte, nq*q8PackQuad)
		packQ8Row(pw, w.Data)
		x := qRandVec(rng, 8*k, 1)
		x[3] = 0
		for j := 128; j < 160 && j < 8*k; j++ {
			x[j] = 0
		}
		a := getQ8Acts(8, k, false)
		a.quantize(Serial, x, false)
		a.prepQ8X(Serial)
		xd := (*float32)(unsafe.Pointer(&a.sx[0]))
		full := make([]float32, 8*3)
		refTileQ8X(8)(&pw[0], len(pw), &a.xq[0], k, xd, nil, nq, &full[0], 3)
		for T := 1; T <= 8; T++ {
			got := make([]float32, 8*3)
			want := make([]float32, 8*3)
			if asm {
				tilesQ8X[T](&pw[0], len(pw), &a.xq[0], k, xd, nil, nq, &got[0], 3)
			}
			refTileQ8X(T)(&pw[0], len(pw), &a.xq[0], k, xd, nil, nq, &want[0], 3)
			for tt := 0; tt < T; tt++ {
				g, wnt := got[tt*3], want[tt*3]
				if wnt != full[tt*3] {
					t.Errorf("nq=%d twin 1x%d token %d = %g, the 1x8 twin %g", nq, T, tt, wnt, full[tt*3])
				}
				if asm && math.Float32bits(g) != math.Float32bits(wnt) {
					t.Errorf("nq=%d tileQ8X 1x%d token %d: asm %g twin %g", nq, T, tt, g, wnt)
				}
				ex, mag := exactQ8(false, w.Data, a.qs[tt*k:], a.d[tt*a.nb:], 4*nq)
				if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
					t.Errorf("nq=%d tileQ8X 1x%d token %d: twin %g exact %g", nq, T, tt, wnt, ex)
				}
			}
			for i := range got {
				if (i%3 != 0 || i/3 >= T) && got[i] != 0 {
					t.Fatalf("tileQ8X 1x%d wrote out of its tile at %d", T, i)
				}
			}
		}
	}
}

// TestMatMulQuantQ8X runs the generic MatMul and invariance checks with every Q8_0 and Q4_0
// weight packed (packAllQ8), with the installed tiles and with their Go twins, for several token
// group sizes; TestMatMulQ8XShared checks MatMulShared on packed weights against one MatMul
// per weight, bit for bit.
func TestMatMulQuantQ8X(t *testing.T) {
	if quantVNNI {
		quantVNNI = false
		defer func() { quantVNNI = true }()
	}
	old, old4, oq, ox := tilesQ8X, tilesQ4P, q8xToks, x4Toks
	packAllQ8 = true
	defer func() { tilesQ8X, tilesQ4P, q8xToks, x4Toks, packAllQ8 = old, old4, oq, ox, false; q8Packs.Clear() }()
	var twins, twins4 [9]tileFunc
	for T := 1; T <= 8; T++ {
		twins[T], twins4[T] = refTileQ8X(T), refTileQ4P(T)
	}
	for i, ts := range [][9]tileFunc{old, twins} {
		if ts[1] == nil || old4[1] == nil || tilesX4[1] == nil {
			continue
		}
		tilesQ8X, tilesQ4P = ts, old4
		if i == 1 {
			tilesQ4P = twins4
		}
		for _, T := range []int{3, 8} {
			q8xToks, x4Toks = T, T
			checkMatMulQuant(t)
			testMatMulInvariant(t)
			q8Packs.Clear()
		}
	}
}

func TestMatMulQ8XShared(t *testing.T) {
	if tilesQ8X[1] == nil || quantVNNI {
		t.Skip("no packed Q8_0 tiles on this CPU")
	}
	rng := rand.New(rand.NewPCG(73, 74))
	const k, m = 256, 19
	ws := []*tensor.Tensor{randQuant(t, rng, tensor.Q8_0, 40, k), randQuant(t, rng, tensor.Q8_0, 24, k)}
	for _, w := range ws {
		if !PrepackQ8(w) {
			t.Fatal("PrepackQ8 refused a Q8_0 weight")
		}
		defer DropPackQ8(w)
	}
	x := qRandVec(rng, m*k, 1)
	p := NewPool(2)
	outs := [][]float32{make([]float32, m*40), make([]float32, m*24)}
	if err := p.MatMulShared(outs, x, ws, m); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		one := make([]float32, m*w.Shape[0])
		if err := p.MatMul(one, x, w, m); err != nil {
			t.Fatal(err)
		}
		for j := range one {
			if one[j] != outs[i][j] {
				t.Fatalf("weight %d: MatMulShared %g, MatMul %g at %d", i, outs[i][j], one[j], j)
			}
		}
		v, _ := q8Packs.Load(uintptr(unsafe.Pointer(&w.Data[0])))
		if e := v.(*q8Entry); e.pack == nil {
			t.Fatalf("weight %d: no pack made", i)
		}
	}
}

// BenchmarkQ8Pack: repacking a TinyLlama-shaped 5632x2048 Q8_0 weight (the one-time cost per
// weight), MB/s of stored rows.
func BenchmarkQ8Pack(b *testing.B) {
	w := randQuantFast(b, tensor.Q8_0, 5632, 2048)
	for b.Loop() {
		newQ8Pack(Serial, w.Data, false, 5632, 2048)
	}
	b.SetBytes(int64(len(w.Data)))
}

// TestPrepackQ8Refs: a weight registered twice (two models on one mapped file) keeps its pack
// until both registrations are dropped; other types and shapes are refused.
func TestPrepackQ8Refs(t *testing.T) {
	if tilesQ8X[1] == nil || quantVNNI {
		t.Skip("no packed Q8_0 tiles on this CPU")
	}
	rng := rand.New(rand.NewPCG(75, 76))
	w := randQuant(t, rng, tensor.Q8_0, 8, 256)
	if PrepackQ8(randQuant(t, rng, tensor.Q8_0, 8, 96)) || PrepackQ8(randQuant(t, rng, tensor.Q6_K, 8, 256)) {
		t.Fatal("PrepackQ8 registered k = 96 or a Q6_K weight")
	}
	PrepackQ8(w)
	PrepackQ8(w)
	DropPackQ8(w)
	if q8PackFor(Serial, w.Data, false, 8, 256) == nil {
		t.Fatal("pack gone after one of two drops")
	}
	if q8PackFor(Serial, w.Data, true, 8, 256) != nil || q8PackFor(Serial, w.Data, false, 4, 512) != nil {
		t.Fatal("pack returned for another type or shape")
	}
	DropPackQ8(w)
	if q8PackFor(Serial, w.Data, false, 8, 256) != nil {
		t.Fatal("pack still there after both drops")
	}
}
