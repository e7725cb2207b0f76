// This file is quantize's --tune-steps: after the method has written its blocks, their float16
// scales are fine-tuned so that the quantized model's next-token distributions follow the
// float model's on the calibration text (package quant/tune). The method's file is written
// first (OUT.untuned.tmp), tuned, then written again as OUT with the same blocks and the new
// scales, so every method (rtn, imatrix, awq, gptq) can be followed by tuning.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/quant/tune"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/nn"
)

type tuneFlags struct {
	steps, batch, seq, tokens int
	lr                        float64
}

// tuneScales tunes the scales of the GGUF file written at tmp (made from b) and writes the
// result to out through p and opts.
func tuneScales(b *loader.Bundle, p *convert.Plan, opts convert.Options, tmp, out, calText string, tf tuneFlags, stderr io.Writer) error {
	text, err := os.ReadFile(calText)
	if err != nil {
		return err
	}
	bos := b.Tok.BOS()
	if bos < 0 {
		return fmt.Errorf("the tokenizer has no BOS token; tuning rows start with one")
	}
	enc := b.Tok.Encode(string(text), false, false)
	if len(enc) > tf.tokens {
		enc = enc[:tf.tokens]
	}
	ids := make([]int32, len(enc))
	for i, v := range enc {
		ids[i] = int32(v)
	}
	q, err := gguf.Open(tmp) // the file's own bytes (the loader may repack blocks for its kernels)
	if err != nil {
		return err
	}
	defer q.Close()
	cfg := b.Model.Config
	teacher, student, blocks := map[string][]float32{}, map[string][]float32{}, map[string]*tune.Quantized{}
	for name := range nn.TrainedShapes(&cfg) {
		t := b.Model.Weights[name]
		u, ok := q.Tensor(name)
		if t == nil || !ok {
			return fmt.Errorf("tune: %s is missing from %s or %s", name, b.Path, tmp)
		}
		if teacher[name], err = t.Float32(); err != nil {
			return fmt.Errorf("tune: %s: %w", name, err)
		}
		if len(u.Shape) == 2 && tune.Tunable(u.Type) {
			blocks[name] = &tune.Quantized{Type: u.Type, Data: append([]byte(nil), u.Data...)}
			continue
		}
		if student[name], err = u.Float32(); err != nil {
			return fmt.Errorf("tune: %s: %w", name, err)
		}
	}
	res, err := tune.Scales(cfg, teacher, student, blocks, ids, int32(bos), tune.Options{
		Batch: tf.batch, Seq: tf.seq, Steps: tf.steps, LR: tf.lr, Seed: 1,
		Log: func(msg string) { fmt.Fprintln(stderr, msg) }})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "tuned the scales of %d blocks in %d tensors: held-out KL from the float model %.6f -> %.6f (step %d of %d)\n",
		res.Blocks, res.Tensors, res.KLBefore, res.KLBest, res.BestStep, tf.steps)
	opts.Quantize = func(name string, _ *tensor.Tensor, dt tensor.DType) ([]byte, error) {
		u, ok := q.Tensor(name)
		if !ok || u.Type != dt {
			return nil, fmt.Errorf("tune: %s: the untuned file holds no %s of it", name, dt)
		}
		if bl := blocks[name]; bl != nil {
			return bl.Data, nil
		}
		return u.Data, nil
	}
	opts.Warn = nil // the first write gave them
	return convert.WriteGGUF(out, p, opts)
}
