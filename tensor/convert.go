// This file implements whole-tensor conversions: Float32 (dequantize everything) and Convert
// (dequantize, then quantize to another DType). Blocks run along the last dimension, so a
// tensor is converted as one long row once its shape has been checked.
package tensor

import "fmt"

// Float32 returns all elements of t as float32 (row-major), dequantizing if needed.
func (t *Tensor) Float32() ([]float32, error) {
	if _, ok := ZeroBase(t.Type); ok {
		return t.DequantizeZero()
	}
	if err := t.Check(); err != nil {
		return nil, err
	}
	out := make([]float32, t.Elems())
	if t.Type == W8A8 { // packed rows (w8a8_pack.go)
		k := t.Cols()
		for r := 0; r < t.Rows(); r++ {
			if err := DequantizeRow(W8A8, t.RowData(r), out[r*k:(r+1)*k]); err != nil {
				return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
			}
		}
		return out, nil
	}
	if err := DequantizeRow(t.Type, t.Data, out); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	return out, nil
}

// Convert returns a new tensor with t's name and shape and type to. Float values that are
// exactly representable in the target survive bit for bit (e.g. F16 -> F32 -> F16). Converting
// to a block type needs the last dimension to be a multiple of its block size.
func Convert(t *Tensor, to DType) (*Tensor, error) {
	if !to.valid() {
		return nil, fmt.Errorf("tensor %s: convert to unknown dtype %d", t.Name, int(to))
	}
	n, err := ByteSize(to, t.Shape)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: convert to %s: %w", t.Name, to, err)
	}
	vals, err := t.Float32()
	if err != nil {
		return nil, err
	}
	out := &Tensor{Name: t.Name, Type: to, Shape: append([]int(nil), t.Shape...), Data: make([]byte, n)}
	if err := QuantizeRow(to, vals, out.Data); err != nil {
		return nil, fmt.Errorf("tensor %s: convert %s to %s: %w", t.Name, t.Type, to, err)
	}
	return out, nil
}
