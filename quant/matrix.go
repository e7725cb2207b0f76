// This file quantizes one weight matrix [rows, cols] (row-major f32, blocks along rows as GGUF
// stores them) to a block type by round-to-nearest (the reference quantizers of package tensor,
// byte-identical to `convert --type`) or by the importance-weighted encoder (weighted.go).
package quant

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/tensor"
)

// RTN is the reference round-to-nearest encoding of w [rows, cols] as dt.
func RTN(dt tensor.DType, w []float32, rows, cols int) ([]byte, error) {
	rb, err := dt.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	out := make([]byte, rows*rb)
	for r := 0; r < rows; r++ {
		if err := tensor.QuantizeRow(dt, w[r*cols:(r+1)*cols], out[r*rb:(r+1)*rb]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Dequantize decodes data [rows, cols] of type dt.
func Dequantize(dt tensor.DType, data []byte, rows, cols int) ([]float32, error) {
	rb, err := dt.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	if len(data) != rows*rb {
		return nil, fmt.Errorf("quant: %d bytes for %s [%d, %d], want %d", len(data), dt, rows, cols, rows*rb)
	}
	out := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		if err := tensor.DequantizeRow(dt, data[r*rb:(r+1)*rb], out[r*cols:(r+1)*cols]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// importance turns per-column mean squares into encoder weights: a floor of 1e-6 of the mean
// keeps columns the calibration never exercised from being ignored entirely.
func importance(imp []float32) []float32 {
	var mean float64
	for _, v := range imp {
		mean += float64(v)
	}
	mean /= float64(max(len(imp), 1))
	floor := float32(mean * 1e-6)
	if floor == 0 {
		floor = 1e-12
	}
	out := make([]float32, len(imp))
	for i, v := range imp {
		out[i] = max(v, 0) + floor
	}
	return out
}

// Imatrix encodes w [rows, cols] as dt choosing each block's header to minimise the error
// weighted by imp, the per-column mean square of the activation (len cols).
func Imatrix(dt tensor.DType, w []float32, rows, cols int, imp []float32) ([]byte, error) {
	f, err := formatOf(dt)
	if err != nil {
		return nil, err
	}
	if len(imp) != cols {
		return nil, fmt.Errorf("quant: importance of %d columns for a matrix of %d", len(imp), cols)
	}
	if cols%f.unit != 0 {
		return nil, fmt.Errorf("quant: rows of %d are not a multiple of %s's block of %d", cols, dt, f.unit)
	}
	iw := importance(imp)
	rb := cols / f.unit * f.bytes
	out := make([]byte, rows*rb)
	bw := make([]float32, f.unit)
	for r := 0; r < rows; r++ {
		for u := 0; u < cols/f.unit; u++ {
			c0 := u * f.unit
			x := w[r*cols+c0 : r*cols+c0+f.unit]
			elementWeights(bw, x, iw[c0:c0+f.unit])
			f.encodeWeighted(x, bw, out[r*rb+u*f.bytes:r*rb+(u+1)*f.bytes])
		}
	}
	return out, nil
}

// elementWeights sets dst_j = imp_j * sqrt(sigma2 + x_j²), sigma2 = 2 mean(x²) over the block:
// the column importance times a term that also favours the block's large weights (the weighting
// llama.cpp found best for perplexity with an importance matrix).
func elementWeights(dst, x, imp []float32) {
	var s2 float32
	for _, v := range x {
		s2 += v * v
	}
	sigma2 := 2 * s2 / float32(len(x))
	for j, v := range x {
		dst[j] = imp[j] * float32(math.Sqrt(float64(sigma2+v*v)))
	}
}
