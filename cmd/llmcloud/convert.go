// The convert command: llmcloud convert [IN] OUT [--type T] — any model llmcloud opens (GGUF,
// Hugging Face directory, llama2.c checkpoint; no IN: the built-in default model) written as
// GGUF (OUT ends in .gguf), a llama2.c checkpoint (.bin, with tokenizer.bin beside it) or a
// Hugging Face directory (anything else).
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/loader"
)

func init() {
	register("convert", "convert a model between GGUF, Hugging Face and llama2.c, optionally quantizing", runConvert)
}

func runConvert(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("convert", stderr)
	typ := fs.String("type", "", "weight type: f32, f16, bf16, q8_0, q4_0, q4_k, q4_k_m, q6_k (default: keep the input's)")
	tok := fs.String("tokenizer", "", "tokenizer to use instead of the model's own (file or directory)")
	name := fs.String("name", "", "model name to record (default: the input's)")
	shard := fs.Int64("shard-size", convert.DefaultShardBytes, "largest safetensors shard in bytes (Hugging Face output)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud convert [IN] OUT [--type T] [--tokenizer FILE] [--name NAME] [--shard-size BYTES]")
		fmt.Fprintln(stderr, "IN: any model llmcloud opens; with OUT alone (a path that does not exist yet), the built-in default model")
		fmt.Fprintln(stderr, "OUT: *.gguf = GGUF, *.bin = llama2.c checkpoint, anything else = Hugging Face directory")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	var in, out string
	switch len(pos) {
	case 1:
		// OUT alone: the default model. An existing OUT is more likely an IN whose OUT was
		// forgotten than a file to overwrite.
		out = pos[0]
		if _, err := os.Stat(out); err == nil {
			return usagef("%s exists: give IN and OUT, or a new OUT alone to convert the built-in default model", out)
		}
		if in, err = defaultModel(textLog(stderr)); err != nil {
			return err
		}
	case 2:
		in, out = pos[0], pos[1]
	default:
		return usagef("want IN and OUT (or OUT alone to convert the built-in default model), got %d arguments", len(pos))
	}
	b, err := loader.Open(in, loader.Options{Tokenizer: *tok})
	if err != nil {
		return err
	}
	defer b.Close()
	opts := convert.Options{Type: *typ, Name: *name, ShardBytes: *shard,
		Warn: func(msg string) { fmt.Fprintln(stderr, "warning:", msg) }}
	p := convert.FromBundle(b)
	if err := convert.Write(out, p, opts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s, %d tensors) from %s (%s)\n", out, convertOutFormat(out), len(p.Tensors), in, b.Format)
	return nil
}

func convertOutFormat(out string) string {
	switch {
	case strings.HasSuffix(out, ".gguf"):
		return "GGUF"
	case strings.HasSuffix(out, ".bin"):
		return "llama2.c"
	}
	return "Hugging Face directory"
}
