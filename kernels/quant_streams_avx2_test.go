package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestRows4A checks the AVX2 four-stream decode kernels (Q8_0 and Q4_0) on 1, 2, 3 and 7 row
// groups with 1 to 32 block pairs, their streams in scattered order and their results
// strided: the kernel must give bit for bit what it gives on each row alone (the row padded
// to a group with copies of itself, rowsA),
// its Go twin what the Go reference gives (the two agree to float rounding, and with the exact
// dot product), and nothing
// may be written outside the result slots.
func TestRows4A(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		q4 := dt == tensor.Q4_0
		for _, groups := range []int{1, 2, 3, 7} {
			for _, nb := range []int{1, 2, 3, 4, 6, 7, 64} {
				if nb%2 == 1 {
					continue
				}
				k := nb * 32
				const adv = 3 // row groups advance 3 rows
				rows := 4 * groups * adv
				w := randQuant(t, rng, dt, rows, k)
				rs := len(w.Data) / rows
				a := getQ8Acts(1, k, q4)
				a.quantize(Serial, qRandVec(rng, k, 1), q4)
				type kernel = func(w **byte, adv, nrows int, out **float32, oadv int)
				var kern, twin kernel
				var one, ref func(row []byte, out []float32)
				if q4 {
					a.pairLayout()
					np := nb / 2
					kern = func(w **byte, adv, nrows int, out **float32, oadv int) {
						q4Rows4A(w, adv, nrows, &a.x2[0], &a.d2[0], &a.c2[0], np, out, oadv)
					}
					twin = func(w **byte, adv, nrows int, out **float32, oadv int) {
						q4Rows4AGo(w, adv, nrows, &a.x2[0], &a.d2[0], &a.c2[0], np, out, oadv)
					}
					one = func(row []byte, out []float32) { rowsA(new(streamPtrs), dt, row, rs, 0, 1, a, np, out) }
					ref = func(row []byte, out []float32) { out[0] = q4Row4ARef(row, a.x2, a.d2, a.c2, np) }
				} else {
					a.pairScales()
					np := nb / 2
					kern = func(w **byte, adv, nrows int, out **float32, oadv int) {
						rows4A(w, adv, nrows, &a.qs[0], &a.d2[0], np, out, oadv)
					}
					twin = func(w **byte, adv, nrows int, out **float32, oadv int) {
						rows4AGo(w, adv, nrows, &a.qs[0], &a.d2[0], np, out, oadv)
					}
					one = func(row []byte, out []float32) { rowsA(new(streamPtrs), dt, row, rs, 0, 1, a, np, out) }
					ref = func(row []byte, out []float32) { out[0] = q8Row4ARef(row, a.qs, a.d2, np) }
				}
				// Stream j reads rows start[j] + adv·i; results go to got[5·(4i+j)].
				var start [4]int
				for j := range start {
					start[j] = (3-j)*groups*adv + j%2
				}
				const ostride = 5
				var ws [4]*byte
				var outs [4]*float32
				results := make([][]float32, 2)
				for ii, impl := range []struct {
					name string
					fn   kernel
					row  func(row []byte, out []float32)
				}{{"kernel", kern, one}, {"twin", twin, ref}} {
					got := make([]float32, ostride*4*groups+1)
					results[ii] = got
					for j := range ws {
						ws[j] = &w.Data[start[j]*rs]
						outs[j] = &got[ostride*j]
					}
					impl.fn(&ws[0], adv*rs, groups, &outs[0], 4*ostride*4)
					for i := 0; i < groups; i++ {
						for j := 0; j < 4; j++ {
							r := start[j] + adv*i
							want := make([]float32, 1)
							impl.row(w.Data[r*rs:(r+1)*rs], want)
							if g := got[ostride*(4*i+j)]; g != want[0] {
								t.Fatalf("%s groups=%d nb=%d group %d stream %d: %s %g, row alone %g", dt, groups, nb, i, j, impl.name, g, want[0])
							}
						}
					}
					for i, v := range got {
						if i%ostride != 0 && v != 0 || i >= ostride*4*groups && v != 0 {
							t.Fatalf("%s groups=%d nb=%d %s: wrote %g at %d, outside the result slots", dt, groups, nb, impl.name, v, i)
						}
					}
				}
				for i := 0; i < groups; i++ {
					for j := 0; j < 4; j++ {
						r := start[j] + adv*i
						ex, mag := exactQ8(q4, w.Data[r*rs:], a.qs, a.d, nb)
						g, tw := float64(results[0][ostride*(4*i+j)]), float64(results[1][ostride*(4*i+j)])
						if math.Abs(g-tw) > 1e-6*mag || math.Abs(tw-ex) > 1e-5*mag {
							t.Fatalf("%s groups=%d nb=%d row %d: kernel %g, twin %g, exact %g", dt, groups, nb, r, g, tw, ex)
						}
					}
				}
			}
		}
	}
}
