package model

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func f32s(name string, shape []int, vals func(i int) float32) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(vals(i)))
	}
	return &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: data}
}

// TestInterleaveLayouts: SwapLastAxes moves [e,i,j] to [e,j,i]; SplitInterleaved takes the even
// and odd places of axis 1 (matrices and vectors); JoinInterleaved undoes it; bad shapes fail.
func TestInterleaveLayouts(t *testing.T) {
	x := f32s("x", []int{2, 3, 4}, func(i int) float32 { return float32(i) })
	y, err := SwapLastAxes(x)
	if err != nil {
		t.Fatal(err)
	}
	xv, _ := x.Float32()
	yv, _ := y.Float32()
	for e := 0; e < 2; e++ {
		for i := 0; i < 3; i++ {
			for j := 0; j < 4; j++ {
				if yv[(e*4+j)*3+i] != xv[(e*3+i)*4+j] {
					t.Fatalf("swap [%d,%d,%d]", e, i, j)
				}
			}
		}
	}
	if !slices.Equal(y.Shape, []int{2, 4, 3}) {
		t.Fatalf("swap shape %v", y.Shape)
	}
	for _, shape := range [][]int{{2, 6, 3}, {2, 6}} {
		src := f32s("gu", shape, func(i int) float32 { return float32(i) })
		a, b, err := SplitInterleaved(src, "g", "u")
		if err != nil {
			t.Fatal(err)
		}
		r := 1
		if len(shape) == 3 {
			r = shape[2]
		}
		sv, _ := src.Float32()
		av, _ := a.Float32()
		bv, _ := b.Float32()
		for e := 0; e < 2; e++ {
			for j := 0; j < 3; j++ {
				for k := 0; k < r; k++ {
					if av[(e*3+j)*r+k] != sv[(e*6+2*j)*r+k] || bv[(e*3+j)*r+k] != sv[(e*6+2*j+1)*r+k] {
						t.Fatalf("%v: split at expert %d unit %d", shape, e, j)
					}
				}
			}
		}
		back, err := JoinInterleaved("gu", a, b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.Data, src.Data) || !slices.Equal(back.Shape, src.Shape) {
			t.Fatalf("%v: join(split(x)) != x", shape)
		}
	}
	if _, _, err := SplitInterleaved(f32s("odd", []int{2, 5}, func(int) float32 { return 0 }), "a", "b"); err == nil {
		t.Error("split of an odd axis 1 accepted")
	}
	if _, err := SwapLastAxes(f32s("v", []int{4}, func(int) float32 { return 0 })); err == nil {
		t.Error("swap of a vector accepted")
	}
	if _, err := JoinInterleaved("j", f32s("a", []int{2, 3}, func(int) float32 { return 0 }), f32s("b", []int{2, 4}, func(int) float32 { return 0 })); err == nil {
		t.Error("join of unequal shapes accepted")
	}
}

// TestMXFP4FromHFSpec: transformers' order — element 2j in byte j's low nibble, 2j+1 in its
// high nibble, E2M1 nibble 1 = 0.5, 2 = 1, 0xB = -1.5 (sign bit 8), scale byte 127 = 2^0,
// 128 = 2^1 — decodes through ggml's layout to those values.
func TestMXFP4FromHFSpec(t *testing.T) {
	blocks := &tensor.Tensor{Name: "b", Type: tensor.U8, Shape: []int{2, 1, 16}, Data: make([]byte, 32)}
	scales := &tensor.Tensor{Name: "s", Type: tensor.U8, Shape: []int{2, 1}, Data: []byte{127, 128}}
	blocks.Data[0] = 0x21    // elements 0, 1: 0.5, 1
	blocks.Data[15] = 0xB0   // elements 30, 31: 0, -1.5
	blocks.Data[16+8] = 0x07 // row 1, element 16: 6 (times 2)
	w, err := MXFP4FromHF("w", blocks, scales)
	if err != nil {
		t.Fatal(err)
	}
	v, err := w.Float32()
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 64)
	want[0], want[1], want[31], want[32+16] = 0.5, 1, -1.5, 12
	if !slices.Equal(w.Shape, []int{2, 32}) || !slices.Equal(v, want) {
		t.Fatalf("decoded %v %v, want %v", w.Shape, v, want)
	}
	if _, err := MXFP4FromHF("w", scales, scales); err == nil {
		t.Error("scales as blocks accepted")
	}
}
