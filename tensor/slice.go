package tensor

import "fmt"

// Slice returns sub-tensor i along t's first dimension (an expert's matrix of a stacked
// [experts, rows, cols] mixture-of-experts weight): shape t.Shape[1:], named "name[i]", its
// data aliasing t's. Blocks of a quantized type never straddle it, as they run along the
// last dimension.
func (t *Tensor) Slice(i int) (*Tensor, error) {
	if len(t.Shape) < 2 {
		return nil, fmt.Errorf("tensor %s: shape %v has no sub-tensors", t.Name, t.Shape)
	}
	if i < 0 || i >= t.Shape[0] {
		return nil, fmt.Errorf("tensor %s: sub-tensor %d outside [0, %d)", t.Name, i, t.Shape[0])
	}
	if err := t.Check(); err != nil {
		return nil, err
	}
	size := len(t.Data) / t.Shape[0]
	return &Tensor{Name: fmt.Sprintf("%s[%d]", t.Name, i), Type: t.Type, Shape: append([]int(nil), t.Shape[1:]...),
		Data: t.Data[i*size : (i+1)*size : (i+1)*size]}, nil
}
