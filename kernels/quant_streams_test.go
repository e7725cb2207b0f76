package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestRows4P checks the four-stream decode kernels (Q8_0 and Q4_0) on 1, 2, 3 and 7 row
// groups with 1, 2, 3, 5, 16 and 17 units per row, their streams in scattered order (a row's
// distance to the next of its stream larger than a row, streams in reverse order) and their
// results strided: the kernel (assembly where installed) must give bit for bit what the
// one-row kernel of the same math gives on each row alone (rows4ZTail, rowsZ[1]: a row's value
// never depends on its grouping), its Go twin what the Go reference gives, and nothing may be
// written outside the result slots.
func TestRows4P(t *testing.T) { checkRowsNP(t, 4) }

// TestRows8P is TestRows4P for the eight-stream kernels (q8_0Rows8P, q4_0Rows8P).
func TestRows8P(t *testing.T) { checkRowsNP(t, 8) }

// checkRowsNP runs TestRows4P's checks on the kernels of streams (4 or 8) streams.
func checkRowsNP(t *testing.T, streams int) {
	rng := rand.New(rand.NewPCG(23, 24))
	type kernel = func(w **byte, adv int, nrows int, xs *int8, xd *float32, fz *float32, nu int, out **float32, oadv int)
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		for _, groups := range []int{1, 2, 3, 7} {
			for _, nu := range []int{1, 2, 3, 5, 16, 17} {
				q4 := dt == tensor.Q4_0
				k := nu * 64
				if q4 {
					k = nu * 128
				}
				const adv = 3 // row groups advance 3 rows
				rows := streams * groups * adv
				w := randQuant(t, rng, dt, rows, k)
				rs := len(w.Data) / rows
				a := getQ8Acts(1, k, q4)
				a.quantize(Serial, qRandVec(rng, k, 1), q4)
				var kern, twin kernel
				var one, ref func(row []byte, out []float32)
				if q4 {
					a.prepQuad()
					kern = func(w **byte, adv int, nrows int, _ *int8, _ *float32, _ *float32, nu int, out **float32, oadv int) {
						if streams == 8 {
							q4Rows8P(w, adv, nrows, &a.x4[0], &a.d4[0], &a.c4[0], nu, out, oadv)
						} else {
							q4Rows4P(w, adv, nrows, &a.x4[0], &a.d4[0], &a.c4[0], nu, out, oadv)
						}
					}
					twin = func(w **byte, adv int, nrows int, _ *int8, _ *float32, _ *float32, nu int, out **float32, oadv int) {
						if streams == 8 {
							q4Rows8PGo(w, adv, nrows, &a.x4[0], &a.d4[0], &a.c4[0], nu, out, oadv)
						} else {
							q4Rows4PGo(w, adv, nrows, &a.x4[0], &a.d4[0], &a.c4[0], nu, out, oadv)
						}
					}
					one = func(row []byte, out []float32) { rowsZ[1](&row[0], rs, 1, &a.x4[0], &a.d4[0], &a.c4[0], nu, &out[0]) }
					ref = func(row []byte, out []float32) { rowsZRef(true, row, rs, 1, a.x4, a.d4, a.c4, nu, out) }
				} else {
					a.prepZ(Serial, false)
					kern, twin = rows4P, rows4PGo
					if streams == 8 {
						kern, twin = rows8P, rows8PGo
					}
					one = func(row []byte, out []float32) { rows4ZTail(&row[0], rs, 1, &a.qs[0], &a.dz[0], &a.fz[0], nu, &out[0]) }
					ref = func(row []byte, out []float32) { rows4ZRef(row, rs, 1, a.qs, a.dz, a.fz, nu, out) }
				}
				// Stream j reads rows start[j] + adv·i; results go to got[5·(streams·i+j)].
				start := make([]int, streams)
				for j := range start {
					start[j] = (streams-1-j)*groups*adv + j%2
				}
				const ostride = 5
				got := make([]float32, ostride*streams*groups+1)
				ws := make([]*byte, streams)
				outs := make([]*float32, streams)
				for j := range ws {
					ws[j] = &w.Data[start[j]*rs]
					outs[j] = &got[ostride*j]
				}
				for _, impl := range []struct {
					name string
					fn   kernel
					row  func(row []byte, out []float32)
				}{{"kernel", kern, one}, {"twin", twin, ref}} {
					clear(got)
					var xs *int8
					var xd, fz *float32
					if !q4 {
						xs, xd, fz = &a.qs[0], &a.dz[0], &a.fz[0]
					}
					impl.fn(&ws[0], adv*rs, groups, xs, xd, fz, nu, &outs[0], 4*ostride*streams)
					for i := 0; i < groups; i++ {
						for j := 0; j < streams; j++ {
							r := start[j] + adv*i
							want := make([]float32, 1)
							impl.row(w.Data[r*rs:(r+1)*rs], want)
							if g := got[ostride*(streams*i+j)]; g != want[0] {
								t.Fatalf("%d streams %s groups=%d nu=%d group %d stream %d: %s %g, row alone %g", streams, dt, groups, nu, i, j, impl.name, g, want[0])
							}
						}
					}
					for i, v := range got {
						if i%ostride != 0 && v != 0 || i >= ostride*streams*groups && v != 0 {
							t.Fatalf("%s groups=%d nu=%d %s: wrote %g at %d, outside the result slots", dt, groups, nu, impl.name, v, i)
						}
					}
				}
			}
		}
	}
}

// TestGemvStreams checks the four- and eight-stream splits of the decode rows (gemvStreams) against the
// 64-row chunks it replaces, bit for bit, for Q8_0 and Q4_0 (VNNI or AVX2 kernels; k = 96 has an odd block count): single weights and q/k/v-like groups of weights with
// row counts that are not multiples of 4 or of the pool's share, on pools of 1, 2 and 3
// workers, so that streams cross from one weight into the next, shares end with rows that do
// not fill a group, and workers steal.
func TestGemvStreams(t *testing.T) {
	if !quantVNNI && !quantAsm {
		t.Skip("no VNNI or AVX2 kernels: gemvStreams is not used")
	}
	rng := rand.New(rand.NewPCG(25, 26))
	defer func(v bool, v8 [2]bool, mk int) { useStreams, useStreams8, streams8MinK = v, v8, mk }(useStreams, useStreams8, streams8MinK)
	streams8MinK = 0
	for _, eight := range []bool{false, true} {
		for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
			for _, k := range []int{96, 128, 384, 2048} {
				for _, shapes := range [][]int{{1}, {3}, {17}, {64}, {203}, {2048}, {37, 5, 130}, {64, 8, 8}, {301, 1, 2}} {
					ws := make([]*tensor.Tensor, len(shapes))
					for i, n := range shapes {
						ws[i] = randQuant(t, rng, dt, n, k)
					}
					x := qRandVec(rng, k, 1)
					for _, workers := range []int{1, 2, 3} {
						t.Run(fmt.Sprintf("eight=%v/%s/k%d/%v/t%d", eight, dt, k, shapes, workers), func(t *testing.T) {
							useStreams8 = [2]bool{eight, eight}
							p := NewPool(workers)
							run := func(streams bool) [][]float32 {
								useStreams = streams
								outs := make([][]float32, len(ws))
								for i, w := range ws {
									outs[i] = make([]float32, w.Shape[0])
								}
								if err := p.MatMulShared(outs, x, ws, 1); err != nil {
									t.Fatal(err)
								}
								return outs
							}
							want, got := run(false), run(true)
							for i := range want {
								for r := range want[i] {
									if math.Float32bits(got[i][r]) != math.Float32bits(want[i][r]) {
										t.Fatalf("weight %d row %d: streams %g, chunks %g", i, r, got[i][r], want[i][r])
									}
								}
							}
						})
					}
				}
			}
		}
	}
}
