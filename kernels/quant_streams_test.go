package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestRows4P checks the four-stream Q8_0 decode kernel on 1, 2, 3 and 7 row groups with 1, 2,
// 3, 5, 16 and 17 block pairs, its streams in scattered order (a row's distance to the next of
// its stream larger than a row, streams in reverse order) and its results strided: the kernel
// (assembly where installed) must give bit for bit what the four-row kernel gives on the same
// rows (a row's value never depends on its grouping), its Go twin must equal rows4ZRef, and
// nothing may be written outside the result slots.
func TestRows4P(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, groups := range []int{1, 2, 3, 7} {
		for _, nu := range []int{1, 2, 3, 5, 16, 17} {
			k := nu * 64
			const adv = 3 // row groups advance 3 rows; stream j starts at row 4·groups·(3-j)... below
			rows := 4 * groups * adv
			w := randQuant(t, rng, tensor.Q8_0, rows, k)
			rs := len(w.Data) / rows
			a := getQ8Acts(1, k, false)
			a.quantize(Serial, qRandVec(rng, k, 1), false)
			a.prepZ(Serial, false)
			// Stream j reads rows start[j] + adv·i; results go to out[5·(4i+j)].
			var start [4]int
			for j := range start {
				start[j] = (3-j)*groups*adv + j%2
			}
			const ostride = 5
			got := make([]float32, ostride*4*groups+1)
			var ws [4]*byte
			var outs [4]*float32
			for j := range ws {
				ws[j] = &w.Data[start[j]*rs]
				outs[j] = &got[ostride*j]
			}
			for _, impl := range []struct {
				name string
				fn   func(w **byte, adv int, nrows int, xs *int8, xd *float32, fz *float32, nu int, out **float32, oadv int)
			}{{"kernel", rows4P}, {"twin", rows4PGo}} {
				clear(got)
				impl.fn(&ws[0], adv*rs, groups, &a.qs[0], &a.dz[0], &a.fz[0], nu, &outs[0], 4*ostride*4)
				// The same rows through the four-row kernel (consecutive copies) and the reference.
				for i := 0; i < groups; i++ {
					four := make([]byte, 4*rs)
					for j := 0; j < 4; j++ {
						r := start[j] + adv*i
						copy(four[j*rs:], w.Data[r*rs:(r+1)*rs])
					}
					want := make([]float32, 4)
					ref := make([]float32, 4)
					rows4Z(&four[0], rs, 4, &a.qs[0], &a.dz[0], &a.fz[0], nu, &want[0])
					rows4ZRef(four, rs, 4, a.qs, a.dz, a.fz, nu, ref)
					for j := 0; j < 4; j++ {
						g := got[ostride*(4*i+j)]
						if impl.name == "kernel" && g != want[j] {
							t.Fatalf("groups=%d nu=%d group %d stream %d: rows4P %g, rows4Z %g", groups, nu, i, j, g, want[j])
						}
						if impl.name == "twin" && g != ref[j] {
							t.Fatalf("groups=%d nu=%d group %d stream %d: twin %g, rows4ZRef %g", groups, nu, i, j, g, ref[j])
						}
					}
				}
				for i, v := range got {
					if i%ostride != 0 && v != 0 || i >= ostride*4*groups && v != 0 {
						t.Fatalf("groups=%d nu=%d %s: wrote %g at %d, outside the result slots", groups, nu, impl.name, v, i)
					}
				}
			}
		}
	}
}

// TestGemvStreams checks the four-stream split of the decode rows (gemvStreams) against the
// 64-row chunks it replaces, bit for bit: single weights and q/k/v-like groups of weights with
// row counts that are not multiples of 4 or of the pool's share, on pools of 1, 2 and 3
// workers, so that streams cross from one weight into the next, shares end with rows that do
// not fill a group, and workers steal.
func TestGemvStreams(t *testing.T) {
	if !quantVNNI {
		t.Skip("no VNNI kernels: gemvStreams is not used")
	}
	rng := rand.New(rand.NewPCG(25, 26))
	defer func(v bool) { useStreams = v }(useStreams)
	for _, k := range []int{64, 192, 2048} {
		for _, shapes := range [][]int{{1}, {3}, {17}, {64}, {203}, {2048}, {37, 5, 130}, {64, 8, 8}, {301, 1, 2}} {
			ws := make([]*tensor.Tensor, len(shapes))
			for i, n := range shapes {
				ws[i] = randQuant(t, rng, tensor.Q8_0, n, k)
			}
			x := qRandVec(rng, k, 1)
			for _, workers := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("k%d/%v/t%d", k, shapes, workers), func(t *testing.T) {
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
