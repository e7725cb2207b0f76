// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and whatever it accepts must
// survive a write/parse/write cycle unchanged.
package gguf

import (
	"bytes"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func FuzzParse(f *testing.F) {
	f.Add(encode(f, allValueKVs(), smallTensors()))
	f.Add(encode(f, []KV{{KeyAlignment, U32(8)}, {"x", StrArray([]string{"a", "b"})}}, smallTensors()[:1]))
	f.Add(encode(f, []KV{{"v", ArrayOf(ArrayOf(I8Array([]int8{1})))}}, nil))
	f.Add([]byte("GGUF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.gguf")
		if err != nil {
			return
		}
		var w1 bytes.Buffer
		if err := Write(&w1, p.KVs, p.Tensors); err != nil {
			t.Fatalf("parsed file cannot be written back: %v", err)
		}
		q, err := Parse(w1.Bytes(), "rewrite.gguf")
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		for i := range q.Tensors {
			if !bytes.Equal(q.Tensors[i].Data, p.Tensors[i].Data) || q.Tensors[i].Type != p.Tensors[i].Type {
				t.Fatalf("tensor %d changed in the rewrite", i)
			}
		}
		var w2 bytes.Buffer
		if err := Write(&w2, q.KVs, q.Tensors); err != nil || !bytes.Equal(w1.Bytes(), w2.Bytes()) {
			t.Fatalf("write(parse(write(x))) differs from write(x) (err %v)", err)
		}
		for i := range p.Tensors {
			if _, err := (&tensor.Tensor{Type: p.Tensors[i].Type, Shape: p.Tensors[i].Shape, Data: p.Tensors[i].Data}).Float32(); err != nil && p.Tensors[i].Type != tensor.I32 {
				t.Fatalf("tensor %d does not decode: %v", i, err)
			}
		}
	})
}
