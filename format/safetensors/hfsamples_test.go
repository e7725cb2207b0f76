// This file reads files written by the reference (Python/Rust) safetensors implementation,
// kept in testdata/hf-samples (see the README there).
package safetensors

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func TestReferenceSamples(t *testing.T) {
	for _, c := range []struct {
		file string
		dt   tensor.DType
	}{{"e", tensor.F16}, {"f", tensor.F32}, {"i", tensor.I32}} {
		f, err := Open(filepath.Join("testdata", "hf-samples", c.file+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Tensors) != 1 || f.Metadata["test"] != "a" || len(f.Metadata) != 1 {
			t.Fatalf("%s: %d tensors, metadata %v", c.file, len(f.Tensors), f.Metadata)
		}
		x, ok := f.Tensor(c.file)
		if !ok || x.Type != c.dt || len(x.Shape) != 1 || x.Shape[0] != 6 {
			t.Fatalf("%s: tensor %+v", c.file, x)
		}
		vals := make([]float32, 6)
		if err := tensor.DequantizeRow(x.Type, x.Data, vals); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if v != float32(i-3) {
				t.Errorf("%s[%d] = %v, want %d", c.file, i, v, i-3)
			}
		}
		f.Close()
	}
	_, err := Open(filepath.Join("testdata", "hf-samples", "overall.safetensors"))
	if err == nil || !strings.Contains(err.Error(), `unsupported dtype U16 in tensor "H"`) || !strings.Contains(err.Error(), "overall.safetensors") {
		t.Errorf("overall.safetensors: %v", err)
	}
}
