package kernels

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func BenchmarkSmallM(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	n, k := 5632, 2048
	w, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
	for _, m := range []int{1, 2, 3, 4, 8, 16, 32, 64, 128, 512} {
		x := randVec(r, m*k, 1)
		out := make([]float32, m*n)
		for _, th := range []int{0, 100} {
			b.Run(fmt.Sprintf("m=%d/direct<=%d", m, th), func(b *testing.B) {
				defer func(v int) { gemmDirectMaxM = v }(gemmDirectMaxM)
				gemmDirectMaxM = th
				for b.Loop() {
					Default.MatMul(out, x, w, m)
				}
				b.ReportMetric(float64(len(w.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "wGB/s")
			})
		}
	}
}
