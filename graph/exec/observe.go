// This file is the matmul observer: a hook that sees the input of every weight matmul the
// serving executor runs (W8A8 calibration collects per-channel max |x| with it: model/
// w8a8_calib.go). Unset (the default) it costs one atomic load per matmul.
package exec

import (
	"sync/atomic"

	"github.com/llmcloud/llmcloud/tensor"
)

// MatMulObserver, when set, is called before each matmul with its weight ([n, k]) and input
// x ([m, k] row-major). It runs on the executor's goroutine; x must not be kept or changed.
type MatMulObserver func(w *tensor.Tensor, x []float32, m, k int)

var observer atomic.Pointer[MatMulObserver]

// SetMatMulObserver installs fn (nil removes it) and returns the previous one.
func SetMatMulObserver(fn MatMulObserver) MatMulObserver {
	var old *MatMulObserver
	if fn == nil {
		old = observer.Swap(nil)
	} else {
		old = observer.Swap(&fn)
	}
	if old == nil {
		return nil
	}
	return *old
}

// observe calls the observer, if any, for the matmul of w on x ([m, k]).
func observe(w *tensor.Tensor, x []float32, k int) {
	if fn := observer.Load(); fn != nil && k > 0 {
		(*fn)(w, x, len(x)/k, k)
	}
}
