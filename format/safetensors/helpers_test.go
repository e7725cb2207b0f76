// This file holds test helpers: deterministic tensors and raw header construction.
package safetensors

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// f32Tensor makes an F32 tensor whose element i is base+i.
func f32Tensor(name string, base float32, shape ...int) tensor.Tensor {
	t := tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape}
	n := t.Elems()
	t.Data = make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(base+float32(i)))
	}
	return t
}

// halfTensor makes an F16 or BF16 tensor of the given shape with bytes i*7+seed.
func halfTensor(name string, dt tensor.DType, seed byte, shape ...int) tensor.Tensor {
	t := tensor.Tensor{Name: name, Type: dt, Shape: shape}
	t.Data = make([]byte, 2*t.Elems())
	for i := range t.Data {
		t.Data[i] = byte(i*7) + seed
	}
	return t
}

// rawFile assembles a safetensors file from a header string (unpadded) and a data buffer.
func rawFile(header string, buf []byte) []byte {
	out := make([]byte, 8, 8+len(header)+len(buf))
	binary.LittleEndian.PutUint64(out, uint64(len(header)))
	out = append(out, header...)
	return append(out, buf...)
}

func sampleTensors() []tensor.Tensor {
	return []tensor.Tensor{
		f32Tensor("model.embed_tokens.weight", 1, 5, 3),
		halfTensor("model.layers.0.self_attn.q_proj.weight", tensor.F16, 1, 3, 3),
		halfTensor("model.layers.0.mlp.up_proj.weight", tensor.BF16, 2, 4, 3),
		f32Tensor("model.norm.weight", -2, 3),
		f32Tensor("scalar", 42),
		{Name: "empty", Type: tensor.F32, Shape: []int{0, 3}, Data: []byte{}},
		{Name: "ids", Type: tensor.I32, Shape: []int{2}, Data: []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}},
	}
}

func sameTensor(t *testing.T, got *tensor.Tensor, want tensor.Tensor) {
	t.Helper()
	if got.Name != want.Name || got.Type != want.Type || len(got.Shape) != len(want.Shape) || string(got.Data) != string(want.Data) {
		t.Fatalf("tensor %s: got %s %v (%d bytes), want %s %v (%d bytes)", want.Name, got.Type, got.Shape, len(got.Data), want.Type, want.Shape, len(want.Data))
	}
	for i := range got.Shape {
		if got.Shape[i] != want.Shape[i] {
			t.Fatalf("tensor %s: shape %v, want %v", want.Name, got.Shape, want.Shape)
		}
	}
}
