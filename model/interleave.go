// This file holds the tensor layouts a Hugging Face checkpoint may fuse or transpose against
// GGUF (gpt-oss's experts: gate_up_proj [E, D, 2F] with gate and up alternating): swapping
// the last two axes, and splitting/joining two tensors alternating along axis 1.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// SwapLastAxes returns t with its last two axes swapped ([..., M, N] -> [..., N, M]) in new
// memory; t must be of a plain (not block-quantized) type.
func SwapLastAxes(t *tensor.Tensor) (*tensor.Tensor, error) {
	if len(t.Shape) < 2 || t.Type.Quantized() {
		return nil, fmt.Errorf("model: tensor %s: cannot swap the last axes of %s%v", t.Name, t.Type, t.Shape)
	}
	if err := t.Check(); err != nil {
		return nil, err
	}
	k := len(t.Shape)
	m, n, es := t.Shape[k-2], t.Shape[k-1], t.Type.BlockBytes()
	out := make([]byte, len(t.Data))
	mat := m * n * es
	for off := 0; off < len(t.Data); off += mat {
		src, dst := t.Data[off:off+mat], out[off:off+mat]
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				copy(dst[(j*m+i)*es:(j*m+i+1)*es], src[(i*n+j)*es:(i*n+j+1)*es])
			}
		}
	}
	shape := append([]int(nil), t.Shape...)
	shape[k-2], shape[k-1] = n, m
	return &tensor.Tensor{Name: t.Name, Type: t.Type, Shape: shape, Data: out}, nil
}

// interleaveLayout returns, for t of shape [A, 2F, R...], A, F and the bytes of one [R...]
// slice (one element when R is empty).
func interleaveLayout(t *tensor.Tensor) (a, f, inner int, err error) {
	if len(t.Shape) < 2 || t.Shape[1]%2 != 0 {
		return 0, 0, 0, fmt.Errorf("model: tensor %s%v: axis 1 does not hold two tensors alternating", t.Name, t.Shape)
	}
	r := 1
	for _, d := range t.Shape[2:] {
		r *= d
	}
	if inner, err = t.Type.RowBytes(r); err != nil {
		return 0, 0, 0, fmt.Errorf("model: tensor %s: %w", t.Name, err)
	}
	return t.Shape[0], t.Shape[1] / 2, inner, t.Check()
}

// SplitInterleaved splits t [A, 2F, R...] into the tensors of its even and odd places along
// axis 1, each [A, F, R...] in new memory, named even and odd.
func SplitInterleaved(t *tensor.Tensor, even, odd string) (*tensor.Tensor, *tensor.Tensor, error) {
	a, f, inner, err := interleaveLayout(t)
	if err != nil {
		return nil, nil, err
	}
	shape := append([]int(nil), t.Shape...)
	shape[1] = f
	outs := [2]*tensor.Tensor{
		{Name: even, Type: t.Type, Shape: shape, Data: make([]byte, len(t.Data)/2)},
		{Name: odd, Type: t.Type, Shape: append([]int(nil), shape...), Data: make([]byte, len(t.Data)/2)},
	}
	for i := 0; i < a; i++ {
		for j := 0; j < 2*f; j++ {
			src := (i*2*f + j) * inner
			dst := (i*f + j/2) * inner
			copy(outs[j%2].Data[dst:dst+inner], t.Data[src:src+inner])
		}
	}
	return outs[0], outs[1], nil
}

// JoinInterleaved is SplitInterleaved's inverse: even and odd [A, F, R...] alternating along
// axis 1 of a new [A, 2F, R...] tensor named name.
func JoinInterleaved(name string, even, odd *tensor.Tensor) (*tensor.Tensor, error) {
	if even.Type != odd.Type || len(even.Shape) < 2 || fmt.Sprint(even.Shape) != fmt.Sprint(odd.Shape) {
		return nil, fmt.Errorf("model: %s: cannot interleave %s%v with %s%v", name, even.Type, even.Shape, odd.Type, odd.Shape)
	}
	shape := append([]int(nil), even.Shape...)
	shape[1] *= 2
	t := &tensor.Tensor{Name: name, Type: even.Type, Shape: shape, Data: make([]byte, 2*len(even.Data))}
	a, f, inner, err := interleaveLayout(t)
	if err != nil {
		return nil, err
	}
	if err := odd.Check(); err != nil {
		return nil, err
	}
	ins := [2]*tensor.Tensor{even, odd}
	for i := 0; i < a; i++ {
		for j := 0; j < 2*f; j++ {
			dst := (i*2*f + j) * inner
			src := (i*f + j/2) * inner
			copy(t.Data[dst:dst+inner], ins[j%2].Data[src:src+inner])
		}
	}
	return t, nil
}
