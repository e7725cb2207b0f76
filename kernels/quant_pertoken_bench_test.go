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
			ws, x, out, p, release := tokensBench(b, dt, n, k, 4)
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

// BenchmarkManyTokens is BenchmarkTwoTokens for five to eight tokens: one token, then m
// tokens as one GEMM (the tiles) and in one pass (MatMulDecodes: four tokens plus the rest,
// chunk by chunk), and eight tokens with other chunk sizes (m8-cC), alternated call by call;
// medians in µs.
func BenchmarkManyTokens(b *testing.B) {
	packAllQ8 = true
	defer func() { packAllQ8 = false; q8Packs.Clear() }()
	defer func(c int) { splitChunk = c }(splitChunk)
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		for _, sh := range [][2]int{{32000, 768}, {2048, 768}, {5632, 2048}, {32000, 2048}} {
			n, k := sh[0], sh[1]
			ws, x, out, p, release := tokensBench(b, dt, n, k, 8)
			b.Run(fmt.Sprintf("%s/%dx%d", dt, n, k), func(b *testing.B) {
				type variant struct {
					name     string
					m, chunk int // chunk 0: the GEMM
				}
				vs := []variant{{"m1", 1, 0}}
				for m := 5; m <= 8; m++ {
					vs = append(vs, variant{fmt.Sprintf("m%d-gemm", m), m, 0}, variant{fmt.Sprintf("m%d-onepass", m), m, 64})
				}
				for _, c := range []int{16, 128, 256} {
					vs = append(vs, variant{fmt.Sprintf("m8-c%d", c), 8, c})
				}
				secs := make([][]float64, len(vs))
				i := 0
				for b.Loop() {
					for j, v := range vs {
						w := ws[i%len(ws)]
						i++
						t0 := time.Now()
						var err error
						if v.chunk == 0 {
							err = p.MatMul(out[:v.m*n], x[:v.m*k], w, v.m)
						} else {
							splitChunk = v.chunk
							err = p.MatMulDecodes(out[:v.m*n], x[:v.m*k], w, v.m)
						}
						if err != nil {
							b.Fatal(err)
						}
						secs[j] = append(secs[j], time.Since(t0).Seconds())
					}
				}
				for j, v := range vs {
					b.ReportMetric(median(secs[j])*1e6, v.name+"-us")
				}
			})
			_ = release()
		}
	}
}

// tokensBench makes the few-token benchmarks' operands: 128 MiB of huge-page copies of a random
// dt weight [n, k] (the Q4_0 packs made outside the timing), m tokens' inputs and outputs,
// and a pool of two workers.
func tokensBench(b *testing.B, dt tensor.DType, n, k, m int) ([]*tensor.Tensor, []float32, []float32, *Pool, func() error) {
	ws, release := hugeCopies(b, randQuantFast(b, dt, n, k), 4, 128<<20)
	x := qRandVec(rand.New(rand.NewPCG(2, 3)), m*k, 1)
	out := make([]float32, m*n)
	p := NewPool(2)
	for _, w := range ws {
		if err := p.MatMul(out[:m*n], x, w, m); err != nil {
			b.Fatal(err)
		}
	}
	return ws, x, out, p, release
}
