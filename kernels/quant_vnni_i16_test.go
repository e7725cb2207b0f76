package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQuantTileI16 checks the 16-row Q4_0 tiles (T = 1..8 tokens) over 1, 2, 3, 5 and 64
// blocks and 16 or 13 rows (the pack's last group padded with zero rows): the assembly bit for
// bit against the twin refTileI16, the twin against float64 within 1e-5·Σ|terms|, every T
// bit-identical to T = 8, a zero-scale weight block, and no writes outside the tile.
func TestQuantTileI16(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	for _, nb := range []int{1, 2, 3, 5, 64} {
		for _, n := range []int{16, 13} {
			k := nb * 32
			w := randQuant(t, rng, tensor.Q4_0, n, k)
			if nb > 2 {
				w.Data[18*2], w.Data[18*2+1] = 0, 0 // row 0, block 2: scale 0
			}
			wf, _ := w.Float32()
			pk := newI16Pack(Serial, w.Data, n, k)
			if len(pk) != i16PackBytes(n, k) {
				t.Fatalf("pack of %d bytes, want %d", len(pk), i16PackBytes(n, k))
			}
			x := qRandVec(rng, 8*k, 1)
			a := getQ8Acts(8, k, true)
			a.quantize(Serial, x, true)
			a.prepI16(Serial)
			const os = 19 // output stride: columns 16..18 must stay untouched
			all := make([]float32, 8*os)
			refTileI16(8)(&pk[0], &a.xi[0], nb*i16Rec, nb, &all[0], os)
			for tt := 0; tt < 8; tt++ {
				for r := 0; r < i16Rows; r++ {
					var ex, mag float64
					for j := 0; r < n && j < k; j++ {
						p := float64(wf[r*k+j]) * float64(a.qs[tt*k+j]) * float64(a.d[tt*nb+j/32])
						ex, mag = ex+p, mag+math.Abs(p)
					}
					if d := math.Abs(float64(all[tt*os+r]) - ex); d > 1e-5*mag+1e-30 {
						t.Fatalf("nb=%d n=%d token %d row %d: twin %g exact %g", nb, n, tt, r, all[tt*os+r], ex)
					}
				}
			}
			for T := 1; T <= 8; T++ {
				tiles := []tileI16Func{refTileI16(T)}
				if tilesI16[T] != nil {
					tiles = append(tiles, tilesI16[T])
				}
				for i, f := range tiles {
					got := make([]float32, 8*os)
					f(&pk[0], &a.xi[0], nb*i16Rec, nb, &got[0], os)
					for j := range got {
						want := float32(0)
						if j/os < T && j%os < i16Rows {
							want = all[j]
						}
						if math.Float32bits(got[j]) != math.Float32bits(want) {
							t.Fatalf("nb=%d n=%d tile %d (0 twin, 1 asm) 16x%d at token %d col %d: %g, want %g",
								nb, n, i, T, j/os, j%os, got[j], want)
						}
					}
				}
			}
		}
	}
}

// TestMatMulQuantI16 runs the generic MatMul and invariance checks with every Q4_0 weight on
// its 16-row pack (packAllQ8), with the installed tiles and with their Go twins, and with one
// and three groups per work item.
func TestMatMulQuantI16(t *testing.T) {
	if !quantVNNI || tilesI16[1] == nil {
		t.Skip("no AVX-512 VNNI")
	}
	old, og := tilesI16, i16Groups
	packAllQ8, useAMX = true, false // the 16-row tiles for every m (AMX takes m >= 16)
	defer func() { tilesI16, i16Groups, packAllQ8, useAMX = old, og, false, true; q8Packs.Clear() }()
	var twins [i16Toks + 1]tileI16Func
	for T := 1; T <= i16Toks; T++ {
		twins[T] = refTileI16(T)
	}
	for i, ts := range [][i16Toks + 1]tileI16Func{old, twins} {
		tilesI16 = ts
		for _, g := range []int{1, 3} {
			if i == 1 && g == 3 {
				continue
			}
			i16Groups = g
			checkMatMulQuant(t)
			testMatMulInvariant(t)
			q8Packs.Clear()
		}
	}
}

// TestMatMulI16Shared checks MatMulShared on 16-row packs against one MatMul per weight, bit
// for bit, and that PrepackQ8 registers Q4_0 weights (Q8_0 ones only with AMX) under VNNI.
func TestMatMulI16Shared(t *testing.T) {
	if !quantVNNI || tilesI16[1] == nil {
		t.Skip("no AVX-512 VNNI")
	}
	useAMX = false // the 16-row tiles (AMX takes m >= 16)
	defer func() { useAMX = true }()
	rng := rand.New(rand.NewPCG(93, 94))
	const k, m = 256, 19
	if PrepackQ8(randQuant(t, rng, tensor.Q8_0, 16, k)) != amxOn() {
		t.Fatal("PrepackQ8 on a Q8_0 weight under VNNI: registered unless AMX is on")
	}
	checkSharedPacked(t, rng, tensor.Q4_0, k, m, "16-row", func(e *q8Entry) bool { return e.packI != nil })
}

// checkSharedPacked runs MatMulShared over two packed weights of type dt ([40, k], [24, k]) on
// m tokens against one MatMul per weight, bit for bit, and checks with has that each weight
// got the pack named what.
func checkSharedPacked(t *testing.T, rng *rand.Rand, dt tensor.DType, k, m int, what string, has func(*q8Entry) bool) {
	t.Helper()
	ws := []*tensor.Tensor{randQuant(t, rng, dt, 40, k), randQuant(t, rng, dt, 24, k)}
	for _, w := range ws {
		if !PrepackQ8(w) {
			t.Fatalf("PrepackQ8 refused a %v weight", dt)
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
		if e := v.(*q8Entry); !has(e) {
			t.Fatalf("weight %d: no %s pack made", i, what)
		}
	}
}
