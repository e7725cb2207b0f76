package model

import (
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestF16PacksFit: F16 matrices are packed (a second copy) only when they take at most a
// quarter of the available memory.
func TestF16PacksFit(t *testing.T) {
	ws := map[string]*tensor.Tensor{
		"a": {Type: tensor.F16, Shape: []int{4, 128}, Data: make([]byte, 1024)},
		"b": {Type: tensor.F16, Shape: []int{4, 128}, Data: make([]byte, 1024)},
		"n": {Type: tensor.F32, Shape: []int{128}, Data: make([]byte, 1<<20)}, // not a matrix to pack
	}
	for _, c := range []struct {
		avail int64
		want  bool
	}{{0, true}, {8192, true}, {8191, false}, {1 << 30, true}} {
		if got := f16PacksFit(ws, c.avail); got != c.want {
			t.Errorf("f16PacksFit(2 KiB of F16, avail %d) = %v, want %v", c.avail, got, c.want)
		}
	}
}
