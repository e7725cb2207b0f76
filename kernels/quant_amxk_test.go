package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// amxKKernels returns the Q4_K (q6 false) or Q6_K AMX tiles and unpacker to test: the Go
// twins, and the assembly where installed.
func amxKKernels(q6 bool) (tiles, tiles4 []tileAMXFunc, unpacks []unpackKFunc) {
	if q6 {
		tiles, tiles4, unpacks = []tileAMXFunc{refTileK6AMX}, []tileAMXFunc{refTileK6AMX4}, []unpackKFunc{unpackK6AMXRef}
	} else {
		tiles, tiles4, unpacks = []tileAMXFunc{refTileK4AMX}, []tileAMXFunc{refTileK4AMX4}, []unpackKFunc{unpackK4AMXRef}
	}
	if qi := btoi(q6); tileKAMX[qi] != nil {
		tiles, tiles4, unpacks = append(tiles, tileKAMX[qi]), append(tiles4, tileKAMX4[qi]), append(unpacks, unpackKAMX[qi])
	}
	return
}

// TestQuantTileKAMX checks the Q4_K and Q6_K AMX tiles (16 and 4 tokens) and unpackers over
// 1, 2, 3 and 8 super-blocks, 16 or 13 rows (the last group padded with zero rows), rows
// farther apart than a group's width, two token tiles more than k apart in one call and one
// a call: the unpacked group, assembly against twin byte for byte; the twin tile against the
// float64 of the dequantized weights times the quantized tokens within 1e-5·Σ|terms|; the
// assembly tiles against the twins bit for bit; no writes outside the tile.
func TestQuantTileKAMX(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 102))
	if tileKAMX[0] == nil {
		t.Log("no AMX-INT8 here: the Go twins only")
	}
	const os = 19
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		q6 := dt == tensor.Q6_K
		sub, rec, cfg, cfg4 := amxKShape(q6)
		tiles, tiles4, unpacks := amxKKernels(q6)
		for _, nb := range []int{1, 2, 3, 8} {
			for _, n := range []int{16, 13} {
				k := nb * 256
				ns := k / sub
				xs := k + 64 // token stride
				const m = 2 * amxToks
				x := qRandVec(rng, m*k, 1)
				a := getQ8KActs(m, k)
				a.quantize(Serial, x)
				a.prepAMXK(q6)
				xv := make([]int8, m*xs)
				for tt := 0; tt < m; tt++ {
					copy(xv[tt*xs:], a.qs[tt*k:(tt+1)*k])
				}
				dts := a.dt4
				if q6 {
					dts = a.dt6
				}
				// The group: n rows, then zero rows, at a row stride of rs+40 bytes.
				w := randQuant(t, rng, dt, n, k)
				wf, _ := w.Float32()
				rs := len(w.Data) / n
				src := make([]byte, 16*(rs+40))
				for r := 0; r < n; r++ {
					copy(src[r*(rs+40):], w.Data[r*rs:(r+1)*rs])
				}
				grp := make([][]byte, len(unpacks))
				for i, u := range unpacks {
					grp[i] = make([]byte, ns*rec)
					u(&grp[i][0], &src[0], rs+40, nb)
					if i > 0 && string(grp[i]) != string(grp[0]) {
						for j := range grp[i] {
							if grp[i][j] != grp[0][j] {
								t.Fatalf("%v nb=%d n=%d: unpack asm differs from its twin at byte %d of record %d: %d, want %d", dt, nb, n, j%rec, j/rec, grp[i][j], grp[0][j])
							}
						}
					}
				}
				var buf [768]int32
				want := make([]float32, m*os)
				refTileKAMXT(q6, amxToks, &grp[0][0], &xv[0], xs, &dts[0], ns, &want[0], os, 2)
				for tt := 0; tt < m; tt++ {
					for r := 0; r < i16Rows; r++ {
						var ex, mag float64
						for j := 0; r < n && j < k; j++ {
							p := float64(wf[r*k+j]) * float64(a.qs[tt*k+j]) * float64(a.d[tt*nb+j/256])
							ex, mag = ex+p, mag+math.Abs(p)
						}
						if d := math.Abs(float64(want[tt*os+r]) - ex); d > 1e-5*mag+1e-30 {
							t.Fatalf("%v nb=%d n=%d token %d row %d: twin %g exact %g", dt, nb, n, tt, r, want[tt*os+r], ex)
						}
					}
				}
				for i, f := range tiles {
					one, each := make([]float32, m*os), make([]float32, m*os)
					f(&cfg[0], &grp[0][0], &xv[0], xs, &dts[0], ns, &buf[0], &one[0], os, 2)
					for j := 0; j < 2; j++ {
						f(&cfg[0], &grp[0][0], &xv[j*amxToks*xs], xs, &dts[j*len(dts)/2], ns, &buf[0], &each[j*amxToks*os], os, 1)
					}
					sameBits(t, dt.String(), nb, n, i, one, want)
					sameBits(t, dt.String()+" one tile a call", nb, n, i, each, want)
				}
				for P := 1; P <= 4; P++ { // the VNNI dots: tokens i0..i0+P-1 of tile 1
					dots := []kDotFunc{refDotKZ(q6, P)}
					if f := dotsKZ[btoi(q6)][P]; f != nil {
						dots = append(dots, f)
					}
					for i, f := range dots {
						for _, i0 := range []int{0, 3, 12} {
							got := make([]float32, m*os)
							t0 := amxToks + i0
							f(&grp[0][0], &xv[t0*xs], xs, &dts[len(dts)/2+i0], ns, &got[t0*os], os)
							want4 := make([]float32, len(want))
							copy(want4[t0*os:(t0+P)*os], want[t0*os:(t0+P)*os])
							sameBits(t, fmt.Sprintf("%v %d-token VNNI dots at %d", dt, P, i0), nb, n, i, got, want4)
						}
					}
				}
				for i, f := range tiles4 { // tokens 0-3 of each tile; the other rows untouched
					got := make([]float32, m*os)
					f(&cfg4[0], &grp[0][0], &xv[0], xs, &dts[0], ns, &buf[0], &got[0], os, 2)
					want4 := make([]float32, len(want))
					for j := range want4 {
						if j/os%amxToks < 4 {
							want4[j] = want[j]
						}
					}
					sameBits(t, dt.String()+" 4-token tiles", nb, n, i, got, want4)
				}
			}
		}
	}
}

// TestMatMulQuantAMXK runs the generic MatMul and invariance checks with the Q4_K and Q6_K
// AMX tiles installed, the assembly and the Go twins, one and three groups per work item (on
// a VNNI machine without AMX, the twins only).
func TestMatMulQuantAMXK(t *testing.T) {
	if !quantVNNI {
		t.Skip("no AVX-512 VNNI")
	}
	ot, ot4, ou, og, oa := tileKAMX, tileKAMX4, unpackKAMX, amxGroups, tileAMX
	defer func() { tileKAMX, tileKAMX4, unpackKAMX, amxGroups, tileAMX = ot, ot4, ou, og, oa }()
	if tileAMX == nil { // amxOn needs it: the Q8_0 / Q4_0 twins
		tileAMX, tileAMX4, unpackAMX = refTileAMX, refTileAMX4, unpackAMXRef
		defer func() { tileAMX4, unpackAMX = nil, nil }()
	}
	var sets [][3]any
	sets = append(sets, [3]any{
		[2]tileAMXFunc{refTileK4AMX, refTileK6AMX}, [2]tileAMXFunc{refTileK4AMX4, refTileK6AMX4}, [2]unpackKFunc{unpackK4AMXRef, unpackK6AMXRef}})
	if ot[0] != nil {
		sets = append(sets, [3]any{ot, ot4, ou})
	}
	for i, s := range sets {
		tileKAMX, tileKAMX4, unpackKAMX = s[0].([2]tileAMXFunc), s[1].([2]tileAMXFunc), s[2].([2]unpackKFunc)
		for _, g := range []int{1, 3} {
			if i == 0 && g == 3 {
				continue
			}
			amxGroups = g
			checkMatMulQuant(t)
			testMatMulInvariant(t)
		}
	}
}

// TestMatMulAMXKSameAsVNNI checks Q4_K and Q6_K GEMMs on AMX against the VNNI kernels within
// rounding (n and m not multiples of 16, m from 2, k up to 5632).
func TestMatMulAMXKSameAsVNNI(t *testing.T) {
	if !amxKOn() {
		t.Skip("no AMX-INT8")
	}
	defer func() { useAMX = true }()
	rng := rand.New(rand.NewPCG(103, 104))
	p := NewPool(2)
	for _, sh := range [][3]int{{16, 16, 256}, {37, 45, 768}, {61, 2, 5632}, {33, 20, 2048}, {50, 67, 512}} {
		n, m, k := sh[0], sh[1], sh[2]
		x := qRandVec(rng, m*k, 1)
		for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
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
				if d := math.Abs(float64(amx[j] - vnni[j])); d > 1e-4*(1+math.Abs(float64(vnni[j]))) {
					t.Fatalf("%v n=%d m=%d k=%d at %d: AMX %g, VNNI %g", dt, n, m, k, j, amx[j], vnni[j])
				}
			}
		}
	}
}
