// This file implements Write: serialising canonical GGUF-named weights as a llama2.c v0
// checkpoint (float32; weights of other dtypes are dequantized).
package llama2c

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/llmcloud/llmcloud/tensor"
)

// Write writes header h and the weights named in ts (canonical names as produced by Parse)
// to w. Every weight must be present with the shape the header implies; FreqCisReal and
// FreqCisImag are computed (RoPE base 10000, as llama2.c does) when ts lacks them. When
// h.Shared is false, output.weight is required.
func Write(w io.Writer, h Header, ts map[string]*tensor.Tensor) error {
	if err := h.Validate(); err != nil {
		return fmt.Errorf("llama2c: write: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	vocab := h.Vocab
	if !h.Shared {
		vocab = -vocab
	}
	for _, v := range []int{h.Dim, h.HiddenDim, h.Layers, h.Heads, h.KVHeads, vocab, h.SeqLen} {
		if err := binary.Write(bw, binary.LittleEndian, int32(v)); err != nil {
			return fmt.Errorf("llama2c: write header: %w", err)
		}
	}
	real, imag := freqCis(h, 10000)
	var buf []float32
	var out []byte
	emit := func(name string, shape []int) error {
		t, ok := ts[name]
		if !ok {
			switch name {
			case FreqCisReal:
				t = &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: f32Bytes(real)}
			case FreqCisImag:
				t = &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: f32Bytes(imag)}
			default:
				return fmt.Errorf("llama2c: write: tensor %s missing", name)
			}
		}
		if prod(t.Shape) != prod(shape) || t.Cols() != shape[len(shape)-1] {
			return fmt.Errorf("llama2c: write: %s: shape %v, header wants %v", name, t.Shape, shape)
		}
		if err := t.Check(); err != nil {
			return fmt.Errorf("llama2c: write: %w", err)
		}
		cols := t.Cols()
		buf = slices.Grow(buf[:0], cols)[:cols]
		out = slices.Grow(out[:0], 4*cols)[:4*cols]
		for r := 0; r < t.Rows(); r++ {
			if err := tensor.DequantizeRow(t.Type, t.RowData(r), buf); err != nil {
				return fmt.Errorf("llama2c: write: %s row %d: %w", name, r, err)
			}
			for i, v := range buf {
				binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
			}
			if _, err := bw.Write(out); err != nil {
				return fmt.Errorf("llama2c: write %s: %w", name, err)
			}
		}
		return nil
	}
	for _, s := range h.sections() {
		if !s.layer {
			if err := emit(s.name, s.shape); err != nil {
				return err
			}
			continue
		}
		for l := 0; l < h.Layers; l++ {
			if err := emit(fmt.Sprintf("blk.%d.%s", l, s.name), s.shape); err != nil {
				return err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("llama2c: write: %w", err)
	}
	return nil
}

// freqCis computes llama2.c's RoPE tables, each [seqLen, headSize/2]:
// cos and sin of pos * theta^(-2i/headSize).
func freqCis(h Header, theta float64) (real, imag []float32) {
	hs := h.HeadSize()
	half := hs / 2
	real = make([]float32, h.SeqLen*half)
	imag = make([]float32, h.SeqLen*half)
	for i := 0; i < half; i++ {
		f := float32(1 / math.Pow(theta, float64(2*i)/float64(hs)))
		for p := 0; p < h.SeqLen; p++ {
			a := float64(float32(p) * f)
			real[p*half+i] = float32(math.Cos(a))
			imag[p*half+i] = float32(math.Sin(a))
		}
	}
	return real, imag
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
