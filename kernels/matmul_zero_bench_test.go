package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkZeroDecodeLayers compares one decode token's matmuls over four TinyLlama layers
// (q, k, v, o, gate, up, down: 2048x2048, 256x2048 twice, 2048x2048, 5632x2048 twice,
// 2048x5632; ~100 MB per type, so read from DRAM) in Q4_K (what Q4_K_M uses for most
// tensors), Q4_0Z with groups of 128 (a repacked AWQ/GPTQ checkpoint) with its zero codes
// (the zeros folded into the VNNI kernel, matmul_zero_fused.go: "Q4_0Z"), the same without
// them (the Q4_0 kernel, then the correction pass: "Q4_0Z-pass") and Q4_0. Each round runs
// them back to back on the same pool (in reverse order every other round), so they see the
// same host load; it reports the median milliseconds per token of each and the median of the
// per-round ratios to Q4_K:
//
//	go test ./kernels -run X -bench ZeroDecodeLayers -benchtime 40x
func BenchmarkZeroDecodeLayers(b *testing.B) {
	shapes := [][2]int{{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}, {2048, 5632}}
	const layers = 4
	types := []tensor.DType{tensor.Q4_K, tensor.Q4_0Z, tensor.Q4_0Z, tensor.Q4_0}
	names := []string{"Q4_K", "Q4_0Z", "Q4_0Z-pass", "Q4_0"}
	ws := make([][]*tensor.Tensor, len(types))
	rng := rand.New(rand.NewPCG(7, 8))
	for ti, dt := range types {
		for l := 0; l < layers; l++ {
			for _, sh := range shapes {
				n, k := sh[0], sh[1]
				switch dt {
				case tensor.Q4_0Z:
					w := randQuantFast(b, tensor.Q4_0, n, k)
					w.Type = tensor.Q4_0Z
					w.Zero = &tensor.GroupZero{Group: 128, Corr: make([]float32, n*k/128)}
					for i := range w.Zero.Corr {
						w.Zero.Corr[i] = float32(rng.NormFloat64() * 0.01)
					}
					if names[ti] == "Q4_0Z" { // codes for the speed only (not consistent with Corr)
						w.Zero.Codes = make([]int8, n*k/128)
						for i := range w.Zero.Codes {
							w.Zero.Codes[i] = int8(-rng.IntN(16))
						}
					}
					ws[ti] = append(ws[ti], w)
				default:
					ws[ti] = append(ws[ti], randQuantFast(b, dt, n, k))
				}
			}
		}
	}
	x := qRandVec(rng, 5632, 1)
	out := make([]float32, 5632)
	p := NewPool(2)
	token := func(ti int) time.Duration {
		t0 := time.Now()
		for _, w := range ws[ti] {
			if err := p.MatMul(out, x[:w.Shape[1]], w, 1); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	for ti := range types { // warm up
		token(ti)
	}
	times := make([][]float64, len(types))
	ratios := make([][]float64, len(types))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var round [4]float64
		for j := range types {
			ti := j
			if i%2 == 1 {
				ti = len(types) - 1 - j
			}
			round[ti] = float64(token(ti).Microseconds()) / 1000
			times[ti] = append(times[ti], round[ti])
		}
		for ti := range types {
			ratios[ti] = append(ratios[ti], round[ti]/round[0])
		}
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for ti, name := range names {
		b.ReportMetric(med(times[ti]), name+"-ms")
		if ti > 0 {
			b.ReportMetric(med(ratios[ti]), name+"/Q4_K")
		}
	}
}
