// This file implements MatMul: f32 activations times a weight matrix stored in any llmcloud
// dtype (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K). The reference method dequantizes one weight
// row at a time to f32 and takes f32 dot products with every activation row, so a batch of m
// tokens dequantizes each weight row once. Output rows are split across the pool's workers.
package kernels

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// Reference forces the plain-Go reference kernels (for tests and comparisons).
var Reference = false

// MatMul computes out = x · wᵀ on the Default pool.
// w is [n, k] in dtype w.Type, x is [m, k], out is [m, n].
func MatMul(out, x []float32, w *tensor.Tensor, m int) error {
	return Default.MatMul(out, x, w, m)
}

// MatMul computes out = x · wᵀ with this pool's workers.
// w is [n, k] in dtype w.Type, x is [m, k], out is [m, n].
func (p *Pool) MatMul(out, x []float32, w *tensor.Tensor, m int) error {
	if slowOn && w.Type.Valid() && slowMatMul[w.Type] > 0 { // an injected slowdown: slowdown.go
		t0 := time.Now()
		err := p.matMul(out, x, w, m)
		spinAfter(t0, slowMatMul[w.Type])
		return err
	}
	return p.matMul(out, x, w, m)
}

// matMul is MatMul without the injected-slowdown hook.
func (p *Pool) matMul(out, x []float32, w *tensor.Tensor, m int) error {
	if len(w.Shape) != 2 {
		return fmt.Errorf("matmul: weight %s has shape %v, want 2-D [n, k]", w.Name, w.Shape)
	}
	n, k := w.Shape[0], w.Shape[1]
	if err := w.Check(); err != nil {
		return fmt.Errorf("matmul: %w", err)
	}
	if m < 0 || len(x) < m*k || len(out) < m*n {
		return fmt.Errorf("matmul: weight %s [%d %d]: x has %d values and out %d, want %d and %d for m=%d",
			w.Name, n, k, len(x), len(out), m*k, m*n, m)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if _, ok := tensor.ZeroBase(w.Type); ok { // HF AWQ/GPTQ, repacked (matmul_zero.go)
		return p.matmulZero(out, x, w, m, n, k)
	}
	rowBytes, err := w.Type.RowBytes(k)
	if err != nil {
		return fmt.Errorf("matmul: weight %s: %w", w.Name, err)
	}
	// Fast paths (AVX2 assembly where the CPU has it) for float and quantized weights; each
	// reports false when it does not handle the case, and the reference below runs instead.
	if !Reference {
		if w.Type == tensor.W8A8 { // int8 x int8 GEMM, per-token activation scales (w8a8.go)
			matmulW8A8(p, out, x, w, m, n, k)
			return nil
		}
		if w.Type.Quantized() {
			if matmulQuant(p, out, x, w, m, n, k) {
				return nil
			}
		} else if matmulFloat(p, out, x, w, m, n, k) {
			return nil
		}
	}
	if w.Type == tensor.F32 {
		if wf := f32View(w.Data); wf != nil {
			p.For(n, 16, func(lo, hi int) { matmulF32(out, x, wf, m, n, k, lo, hi) })
			return nil
		}
	}
	var firstErr error
	errs := make(chan error, p.workers)
	p.For(n, 16, func(lo, hi int) {
		buf := make([]float32, k)
		for r := lo; r < hi; r++ {
			var src []byte
			if w.Type == tensor.W8A8 { // packed groups: a copy of the row (tensor/w8a8_pack.go)
				src = w.RowData(r)
			} else {
				src = w.Data[r*rowBytes : (r+1)*rowBytes]
			}
			if err := tensor.DequantizeRow(w.Type, src, buf); err != nil {
				errs <- fmt.Errorf("matmul: weight %s row %d: %w", w.Name, r, err)
				return
			}
			for i := 0; i < m; i++ {
				out[i*n+r] = Dot(x[i*k:(i+1)*k], buf)
			}
		}
	})
	close(errs)
	for e := range errs {
		if firstErr == nil {
			firstErr = e
		}
	}
	return firstErr
}

// matmulF32 computes rows [lo, hi) of out = x · wᵀ for w an f32 [n, k] matrix.
func matmulF32(out, x, w []float32, m, n, k, lo, hi int) {
	for r := lo; r < hi; r++ {
		wr := w[r*k : (r+1)*k]
		for i := 0; i < m; i++ {
			out[i*n+r] = Dot(x[i*k:(i+1)*k], wr)
		}
	}
}

// Dot is the f32 inner product of a and b (len(b) >= len(a)), with four partial sums (AVX2:
// 32 partial sums).
func Dot(a, b []float32) float32 {
	if useFloatAsm && !Reference && len(a) >= 8 {
		return dotFast(a, b)
	}
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// littleEndian reports whether the machine stores integers little-endian.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// f32View reinterprets little-endian f32 bytes as []float32 without copying, or returns nil
// when that is not possible (unaligned data or a big-endian machine).
func f32View(b []byte) []float32 {
	if len(b) < 4 || !littleEndian || uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// F32View is f32View for callers outside the package (e.g. norm weights stored as F32).
// It returns nil when the bytes cannot be viewed in place.
func F32View(b []byte) []float32 { return f32View(b) }
