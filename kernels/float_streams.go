// This file implements the four-stream decode of float (F32, F16, BF16) rows
// (gemvFloatStreams, on the split of pool_streams.go): the four-row kernels read row g of each
// quarter of a worker's share, the quarters one stride apart. Every row's sum is the four-row
// kernel's, so it does not depend on the number of workers.
package kernels

import (
	"sync"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// useFloatStreams selects gemvFloatStreams for the float decode rows (benchmarks compare it
// with gemvFloat's consecutive groups).
var useFloatStreams = true

// floatStreams is the streamWork of gemvFloatStreams: out[r] = w[r]·x for the rows of data
// (dt, k columns of rb bytes per row; k8 = k rounded down to 8, the part the kernels cover).
type floatStreams struct {
	out, x    []float32
	dt        tensor.DType
	data      []byte
	rb, k, k8 int
	eight     bool // F16 rows read as eight streams (gemvF16x8)
}

var floatStreamsPool = sync.Pool{New: func() any { return &floatStreams{} }}

// gemvFloatStreams computes out[r] = w[r]·x for rows [0, n) of data (dt, k columns).
func gemvFloatStreams(p *Pool, out, x []float32, dt tensor.DType, data []byte, n, k int) {
	f := floatStreamsPool.Get().(*floatStreams)
	*f = floatStreams{out: out, x: x, dt: dt, data: data, rb: k * elemSize(dt), k: k, k8: k &^ 7}
	if f.eight = dt == tensor.F16 && useF16x8; f.eight {
		forStreamsN(p, n, 8, f)
	} else {
		forStreams(p, n, f)
	}
	*f = floatStreams{}
	floatStreamsPool.Put(f)
}

// groups computes groups [g0, g1) of share sh: four rows (F16 with AVX-512: eight) sh.s rows
// apart per kernel call.
func (f *floatStreams) groups(_ int, sh streamShare, g0, g1 int) {
	if f.eight {
		for g := g0; g < g1; g++ {
			f.eightRows(sh.lo+g, sh.s)
		}
		return
	}
	for g := g0; g < g1; g++ {
		f.four(sh.lo+g, sh.s)
	}
}

// eightRows computes the F16 rows r + j·stride (j = 0..7), the columns past k8 included.
func (f *floatStreams) eightRows(r, stride int) {
	var eight [8]float32
	gemvF16x8((*uint16)(unsafe.Pointer(&f.data[r*f.rb])), stride*f.rb, &f.x[0], f.k8, &eight[0])
	for j := range eight {
		row := r + j*stride
		f.out[row] = eight[j]
		if f.k8 < f.k {
			gemvFloatTail(f.out, f.x, f.dt, f.data, f.k, f.k8, row, row+1)
		}
	}
}

// rest computes rows [lo, hi) with the same four-row kernel, the row read four times (stride
// 0), so that every row's sum is the four-row kernel's whatever the split.
func (f *floatStreams) rest(_, lo, hi int) {
	for r := lo; r < hi; r++ {
		f.four(r, 0)
	}
}

// four computes rows r + j·stride (j = 0..3), the columns past k8 included.
func (f *floatStreams) four(r, stride int) {
	var four [4]float32
	gemvFloatX4(f.dt, unsafe.Pointer(&f.data[r*f.rb]), stride*f.rb, &f.x[0], f.k8, &four[0])
	rows := 4
	if stride == 0 {
		rows = 1
	}
	for j := range rows {
		row := r + j*stride
		f.out[row] = four[j]
		if f.k8 < f.k {
			gemvFloatTail(f.out, f.x, f.dt, f.data, f.k, f.k8, row, row+1)
		}
	}
}

// gemvFloatX4 runs the four-row GEMV kernel of dt (rows ldw bytes apart from w) on x's first
// k8 values into out[0..3].
func gemvFloatX4(dt tensor.DType, w unsafe.Pointer, ldw int, x *float32, k8 int, out *float32) {
	switch dt {
	case tensor.F32:
		gemvF32x4((*float32)(w), ldw, x, k8, out)
	case tensor.F16:
		gemvF16x4((*uint16)(w), ldw, x, k8, out)
	case tensor.BF16:
		gemvBF16x4((*uint16)(w), ldw, x, k8, out)
	}
}
