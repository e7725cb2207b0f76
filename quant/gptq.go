// This file is GPTQ for GGUF block types: the columns of W are quantized left to right and
// each one's rounding error is spread over the columns not yet quantized through the upper
// Cholesky factor U of the inverse of the damped Hessian (H + damp*mean(diag H)*I, H = X^T X
// of the calibration activations), so that the layer's output on the calibration data, not
// each weight, stays close. Updates to the columns past the current batch of Block columns
// are applied lazily, once per batch (one rank-Block update).
//
// GGUF's blocks fix the grid of each group by its header, so when the sweep reaches a block's
// first column the block's header is chosen (per row) from the weights as updated so far, by
// the importance-weighted encoder with the Hessian's diagonal as importance; GPTQ then rounds
// every column of the block onto that fixed grid with error compensation.
package quant

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// GPTQOptions tune GPTQ.
type GPTQOptions struct {
	Damp  float64 // relative damping (0: 0.01)
	Block int     // lazy-update batch in columns, a multiple of the format's block (0: 128, or 256 for K-quants)
}

// GPTQ encodes w [rows, cols] as dt given h = X^T X [cols, cols].
func GPTQ(dt tensor.DType, w []float32, rows, cols int, h []float64, o GPTQOptions) ([]byte, error) {
	f, err := formatOf(dt)
	if err != nil {
		return nil, err
	}
	if cols%f.unit != 0 {
		return nil, fmt.Errorf("quant: gptq: rows of %d are not a multiple of %s's block of %d", cols, dt, f.unit)
	}
	if len(h) != cols*cols {
		return nil, fmt.Errorf("quant: gptq: Hessian of %d values for %d columns", len(h), cols)
	}
	if o.Damp <= 0 {
		o.Damp = 0.01
	}
	if o.Block <= 0 {
		o.Block = max(128, f.unit)
	}
	if o.Block%f.unit != 0 {
		return nil, fmt.Errorf("quant: gptq: block of %d columns is not a multiple of %s's block of %d", o.Block, dt, f.unit)
	}
	hd := append([]float64(nil), h...)
	var mean float64
	for i := 0; i < cols; i++ {
		mean += hd[i*cols+i]
	}
	mean /= float64(cols)
	if mean <= 0 {
		mean = 1
	}
	imp := make([]float32, cols)
	for i := 0; i < cols; i++ {
		if hd[i*cols+i] <= 0 { // a column no calibration row reached
			hd[i*cols+i] = 1
		}
		hd[i*cols+i] += o.Damp * mean
		imp[i] = float32(hd[i*cols+i])
	}
	u, ok := invUpperCholesky(hd, cols)
	if !ok {
		return nil, fmt.Errorf("quant: gptq: the damped Hessian is not positive definite (damp %g)", o.Damp)
	}
	// wt[c] is column c over all rows (contiguous).
	wt := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			wt[c*rows+r] = w[r*cols+c]
		}
	}
	rb := cols / f.unit * f.bytes
	out := make([]byte, rows*rb)
	L := make([]int, rows*cols)
	ng := f.unit / f.group
	dg, mg := make([]float32, rows*ng), make([]float32, rows*ng) // the current block's grids
	xs := make([]float32, f.unit)
	errs := make([]float32, o.Block*rows)
	for c0 := 0; c0 < cols; c0 += o.Block {
		c1 := min(c0+o.Block, cols)
		for j := c0; j < c1; j++ {
			if j%f.unit == 0 { // choose this block's headers from the updated weights
				bi := j / f.unit
				for r := 0; r < rows; r++ {
					for i := range xs {
						xs[i] = wt[(j+i)*rows+r]
					}
					blk := out[r*rb+bi*f.bytes : r*rb+(bi+1)*f.bytes]
					f.encodeWeighted(xs, imp[j:j+f.unit], blk)
					f.parseGrid(blk, dg[r*ng:(r+1)*ng], mg[r*ng:(r+1)*ng])
				}
			}
			g := (j % f.unit) / f.group
			col := wt[j*rows : (j+1)*rows]
			e := errs[(j-c0)*rows : (j-c0+1)*rows]
			ujj := float32(u[j*cols+j])
			for r, x := range col {
				d, m := dg[r*ng+g], mg[r*ng+g]
				l := f.nearest(x, d, m)
				L[r*cols+j] = l
				e[r] = (x - (d*float32(l) - m)) / ujj
			}
			for i := j + 1; i < c1; i++ {
				axpy(wt[i*rows:(i+1)*rows], e, -float32(u[j*cols+i]))
			}
		}
		for i := c1; i < cols; i++ {
			dst := wt[i*rows : (i+1)*rows]
			for j := c0; j < c1; j++ {
				if uji := u[j*cols+i]; uji != 0 {
					axpy(dst, errs[(j-c0)*rows:(j-c0+1)*rows], -float32(uji))
				}
			}
		}
	}
	for r := 0; r < rows; r++ {
		for bi := 0; bi < cols/f.unit; bi++ {
			f.setQuants(out[r*rb+bi*f.bytes:r*rb+(bi+1)*f.bytes], L[r*cols+bi*f.unit:r*cols+(bi+1)*f.unit])
		}
	}
	return out, nil
}

// axpy sets dst += a*x.
func axpy(dst, x []float32, a float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}
