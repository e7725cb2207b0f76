package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestGemvFloatStreams checks the four-stream split of the float decode rows: every row must be,
// bit for bit, the four-row kernel's sum of that row (called on the row alone) plus the column
// tail, whatever the pool (1, 2 or 3 workers), on F32, F16 and BF16, with row counts that leave
// rows outside the four quarters and column counts with a tail past the kernels' multiple of 8.
// Closeness to the plain-Go reference is TestMatMul's.
func TestGemvFloatStreams(t *testing.T) {
	if !useFloatAsm {
		t.Skip("no float assembly: gemvFloat is not used")
	}
	r := rand.New(rand.NewSource(7))
	defer func(st bool) { useFloatStreams = st }(useFloatStreams)
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, sh := range [][2]int{{1, 8}, {3, 16}, {17, 13}, {64, 64}, {203, 72}, {2048, 96}, {301, 2051}} {
			n, k := sh[0], sh[1]
			w, err := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), dt)
			if err != nil {
				t.Fatal(err)
			}
			x := randVec(r, k, 1)
			for _, workers := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/%dx%d/t%d", dt, n, k, workers), func(t *testing.T) {
					p := NewPool(workers)
					useFloatStreams = true
					got := make([]float32, n)
					if err := p.MatMul(got, x, w, 1); err != nil {
						t.Fatal(err)
					}
					want := make([]float32, n)
					k8 := k &^ 7
					for i := range want {
						var four [4]float32
						switch dt {
						case tensor.F32:
							gemvF32x4((*float32)(unsafe.Pointer(&w.Data[i*k*4])), 0, &x[0], k8, &four[0])
						case tensor.F16:
							gemvF16x4((*uint16)(unsafe.Pointer(&w.Data[i*k*2])), 0, &x[0], k8, &four[0])
						case tensor.BF16:
							gemvBF16x4((*uint16)(unsafe.Pointer(&w.Data[i*k*2])), 0, &x[0], k8, &four[0])
						}
						want[i] = four[0]
					}
					if k8 < k {
						gemvFloatTail(want, x, dt, w.Data, k, k8, 0, n)
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("row %d: streams %g, four-row kernel alone %g", i, got[i], want[i])
						}
					}
				})
			}
		}
	}
}
