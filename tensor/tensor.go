package tensor

import "fmt"

// Tensor is a named n-dimensional array in one of the DTypes. Data holds the raw bytes in the
// file's layout (little-endian; blocks along the last dimension); it may alias an mmapped file,
// so it must be treated as read-only unless the caller made it.
type Tensor struct {
	Name  string
	Type  DType
	Shape []int // row-major, outermost first; a linear weight is [out, in]
	Data  []byte
	Zero  *GroupZero // Q4_0Z/Q8_0Z only: the per-group zero corrections (groupzero.go)
}

// Elems is the number of elements (the product of Shape; 1 for a scalar).
func (t *Tensor) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Rows is the product of all dimensions but the last; Cols is the last dimension.
func (t *Tensor) Rows() int { return t.Elems() / max(t.Cols(), 1) }

// Cols is the last (contiguous) dimension, or 1 for a scalar.
func (t *Tensor) Cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

// ByteSize is the number of bytes that Shape and Type call for.
func ByteSize(dt DType, shape []int) (int, error) {
	cols := 1
	rows := 1
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in shape %v", d, shape)
		}
		if i == len(shape)-1 {
			cols = d
		} else {
			rows *= d
		}
	}
	if dt == W8A8 { // packed groups of rows (w8a8_pack.go)
		return W8A8Bytes(rows, cols), nil
	}
	rb, err := dt.RowBytes(cols)
	if err != nil {
		return 0, err
	}
	return rows * rb, nil
}

// Check reports whether Data has exactly the size Shape and Type call for.
func (t *Tensor) Check() error {
	want, err := ByteSize(t.Type, t.Shape)
	if err != nil {
		return fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	if len(t.Data) != want {
		return fmt.Errorf("tensor %s: %s %v needs %d bytes, have %d", t.Name, t.Type, t.Shape, want, len(t.Data))
	}
	return nil
}

// RowData returns the bytes of row r (rows as defined by Rows/Cols). For W8A8, whose rows
// are interleaved in packed groups, it returns a copy of the row in its row form.
func (t *Tensor) RowData(r int) []byte {
	if t.Type == W8A8 {
		row := make([]byte, t.Cols()+4)
		W8A8GetRow(t.Data, t.Cols(), r, row)
		return row
	}
	rb, _ := t.Type.RowBytes(t.Cols())
	return t.Data[r*rb : (r+1)*rb]
}
