// This file is the input gradient of MatMul for a frozen weight of any dtype (QLoRA-style
// fine-tuning on a quantized base): out = x·wᵀ gives dx = dy·w, and no gradient of w is
// needed. The weight stays in its stored type: a tile of at most dxTileFloats values (a few
// whole rows) is dequantized at a time into a pooled scratch and multiplied in by Gemm, so
// the whole matrix is never held in F32.
package kernels

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// dxTileFloats bounds the dequantized tile (1 MiB of f32): large enough that Gemm's packing
// is amortised over many activation rows, small enough to stay in L2.
const dxTileFloats = 1 << 18

// dxTileRows is the number of weight rows of k columns dequantized at a time.
func dxTileRows(n, k int) int {
	return min(n, max(16, min(256, dxTileFloats/max(k, 1))))
}

// MatMulDX computes dx = dy · w on the pool: w is [n, k] in any dtype tensor.DequantizeRow
// reads, dy is [m, n], dx is [m, k]; with acc the product is added to dx.
func (p *Pool) MatMulDX(dx, dy []float32, w *tensor.Tensor, m int, acc bool) error {
	n, k, err := dxCheck(dx, dy, w, m)
	if err != nil || m == 0 || k == 0 {
		return err
	}
	if n == 0 {
		if !acc {
			clear(dx[:m*k])
		}
		return nil
	}
	if w.Type == tensor.F32 {
		if wf := f32View(w.Data); wf != nil {
			p.Gemm(m, k, n, Mat{Data: dy, Stride: n}, Mat{Data: wf, Stride: k}, dx, k, acc)
			return nil
		}
	}
	rows := dxTileRows(n, k)
	buf := getF32(rows * k)
	defer putF32(buf)
	tile := *buf
	for o0 := 0; o0 < n; o0 += rows {
		o1 := min(o0+rows, n)
		if err := dequantRows(p, tile, w, o0, o1, k); err != nil {
			return err
		}
		p.Gemm(m, k, o1-o0, Mat{Data: dy[o0:], Stride: n}, Mat{Data: tile, Stride: k}, dx, k, acc || o0 > 0)
	}
	return nil
}

// dequantRows writes rows [o0, o1) of w (k columns) into tile, split across the pool.
func dequantRows(p *Pool, tile []float32, w *tensor.Tensor, o0, o1, k int) error {
	errs := make([]error, o1-o0)
	p.For(o1-o0, 8, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			errs[r] = tensor.DequantizeRow(w.Type, w.RowData(o0+r), tile[r*k:(r+1)*k])
		}
	})
	for r, err := range errs {
		if err != nil {
			return fmt.Errorf("matmul dx: weight %s row %d: %w", w.Name, o0+r, err)
		}
	}
	return nil
}

// MatMulDXRef is the plain-Go reference of MatMulDX: each weight row dequantized alone, each
// element of dx summed over the rows in order in one float32.
func MatMulDXRef(dx, dy []float32, w *tensor.Tensor, m int, acc bool) error {
	n, k, err := dxCheck(dx, dy, w, m)
	if err != nil {
		return err
	}
	if !acc {
		clear(dx[:m*k])
	}
	row := make([]float32, k)
	for o := 0; o < n; o++ {
		if err := tensor.DequantizeRow(w.Type, w.RowData(o), row); err != nil {
			return fmt.Errorf("matmul dx: weight %s row %d: %w", w.Name, o, err)
		}
		for i := 0; i < m; i++ {
			g := dy[i*n+o]
			d := dx[i*k : (i+1)*k]
			for c, v := range row {
				d[c] += g * v
			}
		}
	}
	return nil
}

// dxCheck validates MatMulDX's operands and returns w's n and k.
func dxCheck(dx, dy []float32, w *tensor.Tensor, m int) (n, k int, err error) {
	if len(w.Shape) != 2 {
		return 0, 0, fmt.Errorf("matmul dx: weight %s has shape %v, want 2-D [n, k]", w.Name, w.Shape)
	}
	if err := w.Check(); err != nil {
		return 0, 0, fmt.Errorf("matmul dx: %w", err)
	}
	if _, ok := tensor.ZeroBase(w.Type); ok {
		return 0, 0, fmt.Errorf("matmul dx: weight %s: %s (group zero points) is not supported", w.Name, w.Type)
	}
	n, k = w.Shape[0], w.Shape[1]
	if m < 0 || len(dy) < m*n || len(dx) < m*k {
		return 0, 0, fmt.Errorf("matmul dx: weight %s [%d %d]: dy has %d values and dx %d, want %d and %d for m=%d",
			w.Name, n, k, len(dy), len(dx), m*n, m*k, m)
	}
	return n, k, nil
}
