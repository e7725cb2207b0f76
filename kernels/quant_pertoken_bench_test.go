package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkTwoTokens compares the ways to run a Q8_0 or Q4_0 matmul of a few tokens
// (PerTokenFaster's choice): one GEMM of m tokens on the tiles (m2-gemm ... m4-gemm), two
// one-token decodes back to back on the same weight (m2-decodes), and m tokens' decodes in one
// pass over the weight (m2-onepass ... m4-onepass: MatMulDecodes), next to one token (m1). Weights registered as a model's (so Q4_0 runs its 16-row packs), 128 MiB of
// copies in huge pages, two workers, the variants alternating; median µs per matmul:
//
//	go test ./kernels -run X -bench TwoTokens -benchtime 100x
func BenchmarkTwoTokens(b *testing.B) {
	packAllQ8 = true
	defer func() { packAllQ8 = false; q8Packs.Clear() }()
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		for _, sh := range [][2]int{{32000, 768}, {2048, 768}, {5632, 2048}, {32000, 2048}} {
			n, k := sh[0], sh[1]
			w0 := randQuantFast(b, dt, n, k)
			ws, release := hugeCopies(b, w0, 4, 128<<20)
			x := qRandVec(rand.New(rand.NewPCG(2, 3)), 4*k, 1)
			out := make([]float32, 4*n)
			p := NewPool(2)
			for _, w := range ws { // make the Q4_0 packs outside the timing
				if err := p.MatMul(out[:2*n], x[:2*k], w, 2); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(fmt.Sprintf("%s/%dx%d", dt, n, k), func(b *testing.B) {
				names := []string{"m1", "m2-gemm", "m2-decodes", "m2-onepass", "m3-gemm", "m3-onepass", "m4-gemm", "m4-onepass"}
				secs := make([][]float64, len(names))
				i := 0
				for b.Loop() {
					for v := range names {
						w := ws[i%len(ws)]
						i++
						t0 := time.Now()
						var err error
						switch names[v] {
						case "m1":
							err = p.MatMul(out[:n], x[:k], w, 1)
						case "m2-gemm", "m3-gemm", "m4-gemm":
							m := int(names[v][1] - '0')
							err = p.MatMul(out[:m*n], x[:m*k], w, m)
						case "m2-onepass", "m3-onepass", "m4-onepass":
							m := int(names[v][1] - '0')
							err = p.MatMulDecodes(out[:m*n], x[:m*k], w, m)
						default:
							for t := 0; t < int(names[v][1]-'0') && err == nil; t++ {
								err = p.MatMul(out[t*n:(t+1)*n], x[t*k:(t+1)*k], w, 1)
							}
						}
						if err != nil {
							b.Fatal(err)
						}
						secs[v] = append(secs[v], time.Since(t0).Seconds())
					}
				}
				for v, name := range names {
					b.ReportMetric(median(secs[v])*1e6, name+"-us")
				}
			})
			_ = release()
		}
	}
}
