// Runnable example: build a GGUF in memory, parse it back and read metadata and a tensor.
package gguf_test

import (
	"bytes"
	"fmt"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/tensor"
)

func Example() {
	w := &tensor.Tensor{Name: "w", Type: tensor.F32, Shape: []int{2, 32}, Data: make([]byte, 2*32*4)}
	q, _ := tensor.Convert(w, tensor.Q8_0)
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.Str("llama")},
		{Key: "llama.block_count", Value: gguf.U32(4)},
		{Key: "tokenizer.ggml.tokens", Value: gguf.StrArray([]string{"<unk>", "<s>"})},
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kvs, []tensor.Tensor{*q}); err != nil {
		panic(err)
	}
	f, err := gguf.Parse(buf.Bytes(), "example.gguf")
	if err != nil {
		panic(err)
	}
	arch, _ := f.String("general.architecture")
	layers, _ := f.Uint("llama.block_count")
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	t, _ := f.Tensor("w")
	// Header 24 + KVs 45+33+69 + tensor info 41 = 212 bytes, padded to 224; 68 bytes of data
	// padded to 96.
	fmt.Println(arch, layers, toks, f.DataOffset, len(buf.Bytes()))
	fmt.Println(t.Name, t.Type, t.Shape, len(t.Data))
	// Output:
	// llama 4 [<unk> <s>] 224 320
	// w Q8_0 [2 32] 68
}
