package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// amxTiles returns the AMX tile and unpacker to test: the Go twins, and the assembly where
// installed.
func amxTiles() (tiles, tiles4 []tileAMXFunc, unpacks []func(dst, src *byte, nb int)) {
	tiles, tiles4, unpacks = []tileAMXFunc{refTileAMX}, []tileAMXFunc{refTileAMX4}, []func(dst, src *byte, nb int){unpackAMXRef}
	if tileAMX != nil {
		tiles, tiles4, unpacks = append(tiles, tileAMX), append(tiles4, tileAMX4), append(unpacks, unpackAMX)
	}
	return
}

// TestQuantTileAMX checks the AMX tiles (16 and 4 tokens) over 1, 2, 3, 5, 64 and 128 blocks and 16 or 13 rows (the
// last group padded with zero rows), two token tiles more than k apart, in one call and one
// tile a call: on a Q8_0 pack the twin against float64 within 1e-5·Σ|terms| and the assembly
// bit for bit against the twin; on a Q4_0 group unpacked (assembly = twin, byte for byte)
// every tile bit for bit against the VNNI 16-row twin refTileI16; a zero-scale block; no
// writes outside the tile.
func TestQuantTileAMX(t *testing.T) {
	rng := rand.New(rand.NewPCG(95, 96))
	tiles, tiles4, unpacks := amxTiles()
	if tileAMX == nil {
		t.Log("no AMX-INT8 here: the Go twins only")
	}
	const os = 19 // output stride: columns 16..18 must stay untouched
	for _, nb := range []int{1, 2, 3, 5, 64, 128} {
		for _, n := range []int{16, 13} {
			k := nb * 32
			xs := k + 32 // token stride
			const m = 2 * amxToks
			x := qRandVec(rng, m*k, 1)
			a := getQ8Acts(m, k, true)
			a.quantize(Serial, x, true)
			a.prepAMX()
			a.prepI16(Serial)
			xv := make([]int8, m*xs)
			for tt := 0; tt < m; tt++ {
				copy(xv[tt*xs:], a.qs[tt*k:(tt+1)*k])
			}
			var buf [512]int32
			w := randQuant(t, rng, tensor.Q8_0, n, k)
			if nb > 2 {
				w.Data[34*2], w.Data[34*2+1] = 0, 0 // row 0, block 2: scale 0
			}
			wf, _ := w.Float32()
			pk := newAMXQ8Pack(Serial, w.Data, n, k)
			if len(pk) != amxPackBytes(n, k) {
				t.Fatalf("pack of %d bytes, want %d", len(pk), amxPackBytes(n, k))
			}
			want := make([]float32, m*os)
			refTileAMX(nil, &pk[0], &xv[0], xs, &a.dt[0], nb, &buf[0], &want[0], os, 2)
			for tt := 0; tt < m; tt++ {
				for r := 0; r < i16Rows; r++ {
					var ex, mag float64
					for j := 0; r < n && j < k; j++ {
						p := float64(wf[r*k+j]) * float64(a.qs[tt*k+j]) * float64(a.d[tt*nb+j/32])
						ex, mag = ex+p, mag+math.Abs(p)
					}
					if d := math.Abs(float64(want[tt*os+r]) - ex); d > 1e-5*mag+1e-30 {
						t.Fatalf("Q8_0 nb=%d n=%d token %d row %d: twin %g exact %g", nb, n, tt, r, want[tt*os+r], ex)
					}
				}
			}
			for i, f := range tiles {
				sameBits(t, "Q8_0", nb, n, i, runTileAMX(f, pk, xv, xs, a.dt, nb), want)
			}
			for i, f := range tiles4 { // tokens 0-3 of each tile; the other rows untouched
				got := make([]float32, len(want))
				f(&amxQ8Config4[0], &pk[0], &xv[0], xs, &a.dt[0], nb, &buf[0], &got[0], os, 2)
				want4 := slices.Clone(want)
				for j := range want4 {
					if j/os%amxToks >= 4 {
						want4[j] = 0
					}
				}
				sameBits(t, "Q8_0 4-token tiles", nb, n, i, got, want4)
			}

			w4 := randQuant(t, rng, tensor.Q4_0, n, k)
			if nb > 2 {
				w4.Data[18*2], w4.Data[18*2+1] = 0, 0
			}
			pi := newI16Pack(Serial, w4.Data, n, k)
			want4 := make([]float32, m*os)
			for tt := 0; tt < m; tt += i16Toks {
				refTileI16(i16Toks)(&pi[0], &a.xi[tt*nb*i16Rec], nb*i16Rec, nb, &want4[tt*os], os)
			}
			grp := make([][]byte, len(unpacks))
			for i, u := range unpacks {
				grp[i] = make([]byte, nb*amxBlock)
				u(&grp[i][0], &pi[0], nb)
				if i > 0 && string(grp[i]) != string(grp[0]) {
					t.Fatalf("nb=%d: unpackQ4AMX differs from its twin", nb)
				}
			}
			for i, f := range tiles {
				sameBits(t, "Q4_0", nb, n, i, runTileAMX(f, grp[0], xv, xs, a.dt, nb), want4)
			}
		}
	}
}

// runTileAMX runs f on two token tiles (xs bytes apart, output stride 19) in one call and one
// tile a call, and returns the first results after checking that the second are the same bits.
func runTileAMX(f tileAMXFunc, w []byte, xv []int8, xs int, dt []float32, nb int) []float32 {
	const os = 19
	var buf [512]int32
	one, each := make([]float32, 2*amxToks*os), make([]float32, 2*amxToks*os)
	f(&amxQ8Config[0], &w[0], &xv[0], xs, &dt[0], nb, &buf[0], &one[0], os, 2)
	for i := 0; i < 2; i++ {
		f(&amxQ8Config[0], &w[0], &xv[i*amxToks*xs], xs, &dt[i*nb*amxToks], nb, &buf[0], &each[i*amxToks*os], os, 1)
	}
	for j := range one {
		if math.Float32bits(one[j]) != math.Float32bits(each[j]) {
			one[j] = float32(math.NaN()) // reported by sameBits
		}
	}
	return one
}

func sameBits(t *testing.T, what string, nb, n, tile int, got, want []float32) {
	t.Helper()
	const os = 19
	for j := range got {
		w := want[j]
		if j%os >= i16Rows {
			w = 0
		}
		if math.Float32bits(got[j]) != math.Float32bits(w) {
			t.Fatalf("%s nb=%d n=%d tile %d (0 twin, 1 asm) token %d col %d: %g, want %g", what, nb, n, tile, j/os, j%os, got[j], w)
		}
	}
}

// TestMatMulQuantAMX runs the generic MatMul and invariance checks with every Q8_0 and Q4_0
// weight on its AMX (Q4_0: 16-row) pack, with the installed tile and with the Go twins, and
// with one and three groups per work item (on a VNNI machine without AMX, the twins only).
func TestMatMulQuantAMX(t *testing.T) {
	if !quantVNNI || tilesI16[1] == nil {
		t.Skip("no AVX-512 VNNI")
	}
	ot, ot4, ou, og := tileAMX, tileAMX4, unpackAMX, amxGroups
	packAllQ8 = true
	defer func() { tileAMX, tileAMX4, unpackAMX, amxGroups, packAllQ8 = ot, ot4, ou, og, false; q8Packs.Clear() }()
	tiles, tiles4, unpacks := amxTiles()
	for i := range tiles {
		tileAMX, tileAMX4, unpackAMX = tiles[i], tiles4[i], unpacks[i]
		for _, g := range []int{1, 3} {
			if i == 0 && g == 3 {
				continue
			}
			amxGroups = g
			checkMatMulQuant(t)
			testMatMulInvariant(t)
			q8Packs.Clear()
		}
	}
}

// TestMatMulAMXSameAsVNNI checks that a Q4_0 GEMM on AMX gives the VNNI 16-row path's bits
// (m from 16, n and m not multiples of 16, k up to 4096), and a Q8_0 one on AMX agrees with the
// VNNI pair tiles within rounding.
func TestMatMulAMXSameAsVNNI(t *testing.T) {
	if !quantVNNI || tilesI16[1] == nil {
		t.Skip("no AVX-512 VNNI")
	}
	ot, ot4, ou := tileAMX, tileAMX4, unpackAMX
	packAllQ8 = true
	defer func() { tileAMX, tileAMX4, unpackAMX, useAMX, packAllQ8 = ot, ot4, ou, true, false; q8Packs.Clear() }()
	if tileAMX == nil {
		tileAMX, tileAMX4, unpackAMX = refTileAMX, refTileAMX4, unpackAMXRef
	}
	rng := rand.New(rand.NewPCG(97, 98))
	p := NewPool(2)
	for _, sh := range [][3]int{{16, 16, 32}, {37, 45, 96}, {61, 50, 4096}, {33, 20, 2048}} {
		n, m, k := sh[0], sh[1], sh[2]
		x := qRandVec(rng, m*k, 1)
		for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q8_0} {
			w := randQuant(t, rng, dt, n, k)
			amx, vnni := make([]float32, m*n), make([]float32, m*n)
			useAMX = true
			if err := p.MatMul(amx, x, w, m); err != nil {
				t.Fatal(err)
			}
			useAMX = false
			if err := p.MatMul(vnni, x, w, m); err != nil {
				t.Fatal(err)
			}
			for j := range amx {
				d := math.Abs(float64(amx[j] - vnni[j]))
				if dt == tensor.Q4_0 && d != 0 || d > 1e-4*(1+math.Abs(float64(vnni[j]))) {
					t.Fatalf("%v n=%d m=%d k=%d at %d: AMX %g, VNNI %g", dt, n, m, k, j, amx[j], vnni[j])
				}
			}
		}
		q8Packs.Clear()
	}
}

// TestMatMulAMXShared checks MatMulShared on AMX packs against one MatMul per weight, bit for
// bit, and that PrepackQ8 registers Q8_0 weights when AMX is on.
func TestMatMulAMXShared(t *testing.T) {
	if !amxOn() {
		t.Skip("no AMX-INT8")
	}
	rng := rand.New(rand.NewPCG(99, 100))
	const k, m = 256, 37
	checkSharedPacked(t, rng, tensor.Q8_0, k, m, "AMX", func(e *q8Entry) bool { return e.packA != nil })
}

// TestNoAMXEnv runs this test binary again with LLMCLOUD_NO_AMX=1: AMX must be off there
// (TestAMXOffChild), and the quantized GEMM checks pass on the VNNI paths.
func TestNoAMXEnv(t *testing.T) {
	if os.Getenv("LLMCLOUD_NO_AMX") != "" {
		t.Skip("the child")
	}
	if tileAMX == nil {
		t.Skip("no AMX-INT8")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^(TestAMXOffChild|TestMatMulQuant)$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LLMCLOUD_NO_AMX=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with LLMCLOUD_NO_AMX=1: %v\n%s", err, out)
	}
}

// TestAMXOffChild checks that LLMCLOUD_NO_AMX=1 turns both AMX paths off.
func TestAMXOffChild(t *testing.T) {
	if os.Getenv("LLMCLOUD_NO_AMX") == "" {
		t.Skip("run by TestNoAMXEnv")
	}
	if tileAMX != nil || useAMXBF16 || amxOn() {
		t.Fatal("AMX on with LLMCLOUD_NO_AMX=1")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if PrepackQ8(randQuant(t, rng, tensor.Q8_0, 16, 256)) && quantVNNI {
		t.Fatal("PrepackQ8 registered a Q8_0 weight under VNNI without AMX")
	}
}
