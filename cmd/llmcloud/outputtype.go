// The --output-tensor-type flag of the commands that load a model (llama-quantize's name for
// the same choice): the output matrix quantized at load. docs/quantization.md, "AWQ and GPTQ
// checkpoints".
package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/tensor"
)

const outputTypeHelp = "quantize the output matrix (lm_head) at load: q8_0 or q6_k (changes the logits; for checkpoints that keep it in fp16, e.g. AWQ/GPTQ; default: keep)"

// registerOutputType adds --output-tensor-type to a command that does not take the shared
// model flags (bench latency).
func registerOutputType(fs *flag.FlagSet) *string {
	return fs.String("output-tensor-type", "", outputTypeHelp)
}

// applyOutputType converts b's output matrix to typ ("" leaves it), logging what it did on w.
func applyOutputType(b *loader.Bundle, typ string, w io.Writer) error {
	var dt tensor.DType
	switch typ {
	case "":
		return nil
	case "q8_0":
		dt = tensor.Q8_0
	case "q6_k":
		dt = tensor.Q6_K
	default:
		return usagef("--output-tensor-type %q: want q8_0 or q6_k", typ)
	}
	t0 := time.Now()
	before, after, err := b.Model.QuantizeOutput(dt)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "output-tensor-type: output.weight quantized to %s at load (logits change), %.1f -> %.1f MB, in %.1f s\n",
		typ, float64(before)/1e6, float64(after)/1e6, time.Since(t0).Seconds())
	return nil
}
