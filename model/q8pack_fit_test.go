package model

import (
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestQ8PacksFit: Q8_0 matrices are packed (a second copy, 144 bytes per 136) only when the
// packs, with the F16 ones, take at most a quarter of the available memory.
func TestQ8PacksFit(t *testing.T) {
	ws := map[string]*tensor.Tensor{
		"a": {Type: tensor.Q8_0, Shape: []int{4, 256}, Data: make([]byte, 1360)},
		"b": {Type: tensor.F16, Shape: []int{4, 128}, Data: make([]byte, 1024)},
		"n": {Type: tensor.F32, Shape: []int{128}, Data: make([]byte, 1<<20)}, // not a matrix to pack
	}
	for _, c := range []struct {
		avail int64
		want  bool
	}{{0, true}, {4 * 2464, true}, {4*2464 - 1, false}, {1 << 30, true}} {
		if got := q8PacksFit(ws, c.avail); got != c.want {
			t.Errorf("q8PacksFit(avail %d) = %v, want %v", c.avail, got, c.want)
		}
	}
	// A Q4_0 matrix counts 80 bytes per 72.
	ws["c"] = &tensor.Tensor{Type: tensor.Q4_0, Shape: []int{4, 256}, Data: make([]byte, 576)}
	if q8PacksFit(ws, 4*(2464+640)-1) || !q8PacksFit(ws, 4*(2464+640)) {
		t.Errorf("q8PacksFit: the Q4_0 matrix's pack not counted as 640 bytes")
	}
}
