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
	defer func(st, e bool) { useFloatStreams, useF16x8 = st, e }(useFloatStreams, useF16x8)
	eights := []bool{false}
	if hasF16x8 {
		eights = append(eights, true)
	}
	for _, eight := range eights {
		useF16x8 = eight
		testGemvFloatStreams(t, r, eight)
	}
}

func testGemvFloatStreams(t *testing.T, r *rand.Rand, eight bool) {
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, sh := range [][2]int{{1, 8}, {3, 16}, {17, 13}, {64, 64}, {203, 72}, {2048, 96}, {301, 2051}} {
			n, k := sh[0], sh[1]
			w, err := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), dt)
			if err != nil {
				t.Fatal(err)
			}
			x := randVec(r, k, 1)
			for _, workers := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/%dx%d/t%d/eight=%v", dt, n, k, workers, eight && dt == tensor.F16), func(t *testing.T) {
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

// TestGemvF16x8 checks the eight-row F16 kernel against the four-row one, bit for bit, row by
// row: rows at a stride of a few rows (the streams of a share), column counts covering the
// 32-, 16- and 8-column steps.
func TestGemvF16x8(t *testing.T) {
	if !hasF16x8 {
		t.Skip("no AVX-512: gemvF16x8 cannot run")
	}
	r := rand.New(rand.NewSource(8))
	for _, k := range []int{0, 8, 16, 24, 32, 40, 56, 64, 776, 2048, 5632} {
		for _, stride := range []int{1, 3} {
			n := 8 * stride
			w, err := tensor.Convert(f32Tensor("w", []int{n, max(k, 1)}, randVec(r, n*max(k, 1), 0.1)), tensor.F16)
			if err != nil {
				t.Fatal(err)
			}
			rb := max(k, 1) * 2
			x := randVec(r, max(k, 8), 1)
			var got [8]float32
			gemvF16x8((*uint16)(unsafe.Pointer(&w.Data[0])), stride*rb, &x[0], k, &got[0])
			for j := range 8 {
				var four [4]float32
				gemvF16x4((*uint16)(unsafe.Pointer(&w.Data[j*stride*rb])), 0, &x[0], k, &four[0])
				if math.Float32bits(got[j]) != math.Float32bits(four[0]) {
					t.Errorf("k=%d stride %d row %d: eight-row kernel %g, four-row kernel %g", k, stride, j, got[j], four[0])
				}
				var want float64
				for i := 0; i < k; i++ {
					want += float64(tensor.F16ToF32(uint16(w.Data[(j*stride)*rb+2*i])|uint16(w.Data[(j*stride)*rb+2*i+1])<<8)) * float64(x[i])
				}
				if d := math.Abs(float64(got[j]) - want); d > 1e-4*(1+math.Abs(want)) {
					t.Errorf("k=%d stride %d row %d: %g, exact %g", k, stride, j, got[j], want)
				}
			}
		}
	}
}
