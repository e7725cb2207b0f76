// Tests of the four-row AVX2 K-quant decode kernels (quant_krows.go): the kernel against its Go
// twin bit for bit, on scattered streams and strided results, each row alone (rowsK padding)
// bit for bit, the twin against the one-row dot and the exact float64 dot, no stray writes.
package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func TestRowsK(t *testing.T) {
	if !rowsKAsm {
		t.Log("no AVX2: the Go twins against themselves and the references")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		q6 := dt == tensor.Q6_K
		qi := 0
		if q6 {
			qi = 1
		}
		for _, groups := range []int{1, 2, 3, 7} {
			for _, nb := range []int{1, 2, 3, 8} {
				k := nb * 256
				const adv = 3 // row groups advance 3 rows
				rows := 4 * groups * adv
				w := randQuant(t, rng, dt, rows, k)
				rs := len(w.Data) / rows
				a := getQ8KActs(1, k)
				a.quantize(Serial, qRandVec(rng, k, 1))
				bs := &a.bsum8[0]
				if q6 {
					bs = &a.bsums[0]
				}
				twins := [2]rowsKFunc{q4KRows4AGo, q6KRows4AGo}
				var start [4]int
				for j := range start {
					start[j] = (3-j)*groups*adv + j%2
				}
				const ostride = 5
				var results [2][]float32
				for ii, fn := range []rowsKFunc{rows4K[qi], twins[qi]} {
					got := make([]float32, ostride*4*groups+1)
					for i := range got {
						got[i] = -7
					}
					results[ii] = got
					var ws [4]*byte
					var outs [4]*float32
					for j := range ws {
						ws[j] = &w.Data[start[j]*rs]
						outs[j] = &got[ostride*j]
					}
					fn(&ws[0], adv*rs, groups, &a.qs[0], &a.d[0], bs, nb, &outs[0], 4*ostride*4)
					for i, v := range got {
						if i%ostride != 0 || i == len(got)-1 {
							if v != -7 {
								t.Fatalf("%s groups=%d nb=%d: wrote %g at %d", dt, groups, nb, v, i)
							}
						}
					}
				}
				for g := 0; g < groups; g++ {
					for j := 0; j < 4; j++ {
						ri := ostride * (4*g + j)
						r := start[j] + adv*g
						row := w.Data[r*rs : (r+1)*rs]
						kv, tv := results[0][ri], results[1][ri]
						if math.Float32bits(kv) != math.Float32bits(tv) {
							t.Errorf("%s groups=%d nb=%d row %d: kernel %g twin %g", dt, groups, nb, r, kv, tv)
						}
						var alone [1]float32
						rowsK(new(streamPtrs), q6, row, rs, 0, 1, a, nb, alone[:])
						if rowsKAsm && math.Float32bits(alone[0]) != math.Float32bits(kv) {
							t.Errorf("%s nb=%d row %d: alone %g in a group %g", dt, nb, r, alone[0], kv)
						}
						var dot float32
						if q6 {
							dot = dotQ6KRef(row, a.qs, a.d, a.bsums, nb)
						} else {
							dot = dotQ4KRef(row, a.qs, a.d, a.bsum8, nb)
						}
						ex, mag := exactDotK(t, dt, row, a, k)
						if d := math.Abs(float64(tv) - ex); d > 2e-5*mag {
							t.Errorf("%s nb=%d row %d: twin %g exact %g (mag %g)", dt, nb, r, tv, ex, mag)
						}
						if d := math.Abs(float64(tv - dot)); d > 2e-5*mag {
							t.Errorf("%s nb=%d row %d: twin %g one-row dot %g (mag %g)", dt, nb, r, tv, dot, mag)
						}
					}
				}
			}
		}
	}
}

// exactDotK returns the float64 dot product of the dequantized row with the quantized token,
// and the sum of the terms' magnitudes.
func exactDotK(t *testing.T, dt tensor.DType, row []byte, a *q8KActs, k int) (ex, mag float64) {
	wf := make([]float32, k)
	if err := tensor.DequantizeRow(dt, row, wf); err != nil {
		t.Fatal(err)
	}
	for i := range wf {
		p := float64(wf[i]) * float64(a.qs[i]) * float64(a.d[i/256])
		ex += p
		mag += math.Abs(p)
	}
	return ex, mag
}

// TestGemvStreamsK checks that Q4_K and Q6_K decode rows give the same bits on the four-stream
// split (gemvStreams) as on the 64-row chunks, for row counts that are not multiples of 4,
// weights grouped as q/k/v (one type, and mixed: chunks both times), on 1, 2 and 3 workers.
func TestGemvStreamsK(t *testing.T) {
	if !useRowsK() {
		t.Skip("no AVX2 four-row K-quant kernels")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	defer func(v bool) { useStreams = v }(useStreams)
	for _, dts := range [][]tensor.DType{{tensor.Q4_K}, {tensor.Q6_K}, {tensor.Q4_K, tensor.Q6_K, tensor.Q4_K}} {
		for _, k := range []int{256, 2048} {
			for _, shapes := range [][]int{{1}, {17}, {203}, {37, 5, 130}} {
				ws := make([]*tensor.Tensor, len(shapes))
				for i, n := range shapes {
					ws[i] = randQuant(t, rng, dts[i%len(dts)], n, k)
				}
				x := qRandVec(rng, k, 1)
				for _, workers := range []int{1, 2, 3} {
					t.Run(fmt.Sprintf("%v/k%d/%v/t%d", dts, k, shapes, workers), func(t *testing.T) {
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
