package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// QuantizeOutput converts the output matrix (output.weight, a Hugging Face checkpoint's
// lm_head) to dt, Q8_0 or Q6_K, row by row with the reference quantizers, and rebinds the
// serving graph; it returns the matrix's bytes before and after. An opt-in: it changes the
// logits. AWQ and GPTQ checkpoints keep lm_head in fp16, which is the largest single matrix
// a 4-bit model reads per decoded token (TinyLlama: 131 of ~680 MB); Q6_K is what llama.cpp's
// Q4_K_M mix stores it in. The matrix must be a separate float tensor (F32, F16 or BF16):
// a model whose output is tied to token_embd, or whose output is quantized already, gets an
// error naming it.
func (m *Model) QuantizeOutput(dt tensor.DType) (before, after int, err error) {
	if dt != tensor.Q8_0 && dt != tensor.Q6_K {
		return 0, 0, fmt.Errorf("output type %s: want q8_0 or q6_k", dt)
	}
	t := m.Weights["output.weight"]
	if t == nil {
		return 0, 0, fmt.Errorf("output type %s: the model has no separate output.weight (the output is tied to token_embd.weight)", dt)
	}
	if t.Type != tensor.F32 && t.Type != tensor.F16 && t.Type != tensor.BF16 || len(t.Shape) != 2 {
		return 0, 0, fmt.Errorf("output type %s: %s is %s %v, want a float (f32, f16, bf16) matrix", dt, t.Name, t.Type, t.Shape)
	}
	n, k := t.Shape[0], t.Shape[1]
	rb, err := dt.RowBytes(k)
	if err != nil {
		return 0, 0, fmt.Errorf("output type %s: %s has rows of %d values: %w", dt, t.Name, k, err)
	}
	srb, err := t.Type.RowBytes(k)
	if err != nil {
		return 0, 0, err
	}
	pool := m.Pool
	if pool == nil {
		pool = kernels.Default
	}
	out := &tensor.Tensor{Name: t.Name, Type: dt, Shape: []int{n, k}, Data: make([]byte, n*rb)}
	errs := make([]error, n)
	pool.For(n, 64, func(lo, hi int) {
		row := make([]float32, k)
		for r := lo; r < hi; r++ {
			if err := tensor.DequantizeRow(t.Type, t.Data[r*srb:(r+1)*srb], row); err != nil {
				errs[r] = err
				return
			}
			errs[r] = tensor.QuantizeRow(dt, row, out.Data[r*rb:(r+1)*rb])
		}
	})
	for r, e := range errs {
		if e != nil {
			return 0, 0, fmt.Errorf("output type %s: %s row %d: %w", dt, t.Name, r, e)
		}
	}
	m.Weights["output.weight"] = out
	if err := m.prepareServing(); err != nil {
		return 0, 0, err
	}
	return len(t.Data), len(out.Data), nil
}
