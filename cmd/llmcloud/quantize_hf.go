// The quantize-hf command: llmcloud quantize-hf IN OUTDIR --format awq|gptq — any model
// llmcloud opens, written as a Hugging Face AWQ or GPTQ checkpoint (config.json with
// quantization_config, safetensors with qweight/qzeros/scales[/g_idx], the tokenizer files as
// convert writes them). The model is first written as a float Hugging Face directory (a
// temporary directory beside OUTDIR, removed afterwards), then each decoder linear is
// quantized (round to nearest, asymmetric, per group) and packed (format/hfquant).
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/hfquant"
	"github.com/llmcloud/llmcloud/loader"
)

func init() {
	register("quantize-hf", "write a Hugging Face AWQ or GPTQ checkpoint (round-to-nearest int4/int8)", runQuantizeHF)
}

func runQuantizeHF(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("quantize-hf", stderr)
	format := fs.String("format", "awq", "checkpoint format: awq (AutoAWQ GEMM, 4-bit) or gptq (AutoGPTQ, checkpoint_format gptq)")
	bits := fs.Int("bits", 4, "bits per weight: 4 (awq, gptq) or 8 (gptq)")
	group := fs.Int("group-size", 128, "input columns per scale/zero group (-1: one group per row, gptq only)")
	method := fs.String("method", "rtn", "quantization method: rtn (round to nearest, asymmetric)")
	tok := fs.String("tokenizer", "", "tokenizer to use instead of the model's own (file or directory)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud quantize-hf IN OUTDIR --format awq|gptq [--bits 4|8] [--group-size 128] [--method rtn]")
		fmt.Fprintln(stderr, "IN: any model llmcloud opens (GGUF, Hugging Face directory, llama2.c); OUTDIR: the Hugging Face directory to write")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want IN and OUTDIR, got %d arguments", len(pos))
	}
	in, out := pos[0], pos[1]
	if *method != "rtn" {
		return usagef("--method %q: only rtn is supported here (calibrated methods: llmcloud quantize)", *method)
	}
	c := &hfquant.Config{Method: *format, Bits: *bits, GroupSize: *group, ZeroPoint: true, Version: "gemm", CheckpointFormat: "gptq"}
	// Validate through the reader, so that what is written is what it accepts.
	if _, _, err := hfquant.FromRaw(map[string]any{"quantization_config": toJSONNumbers(c.Raw())}); err != nil {
		return usagef("%v", err)
	}
	if *format != "awq" && *format != "gptq" {
		return usagef("--format %q: want awq or gptq", *format)
	}
	b, err := loader.Open(in, loader.Options{Tokenizer: *tok})
	if err != nil {
		return err
	}
	defer b.Close()
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(out)), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".quantize-hf-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p := convert.FromBundle(b)
	if err := convert.WriteHF(tmp, p, convert.Options{}); err != nil { // quantized inputs dequantize to F32: expected, no warning
		return err
	}
	n, err := hfquant.WriteDir(tmp, out, c, hfquant.RTNQuantizer(c))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (Hugging Face %s, %d-bit, group %d, %d linears quantized by %s) from %s (%s)\n",
		out, *format, *bits, *group, n, *method, in, b.Format)
	return nil
}

// toJSONNumbers turns the ints of a quantization_config into what a decoded config.json holds.
func toJSONNumbers(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if i, ok := v.(int); ok {
			out[k] = float64(i)
			continue
		}
		out[k] = v
	}
	return out
}

// hfQuantLayout describes an AWQ/GPTQ config.json's quantization_config for inspect: the
// method, bits, group size, desc_act, sym, the packing, and how llmcloud runs it ("" for
// other checkpoints).
func hfQuantLayout(dir string, raw map[string]any) string {
	c, ok, err := hfquant.ForDir(dir, raw)
	switch {
	case err != nil:
		return "invalid: " + err.Error()
	case !ok:
		return ""
	}
	run := "Q4_0Z (Q4_0 rows with d = scale, plus an f32 correction per row and group)"
	if c.Bits == 8 {
		run = "Q8_0Z (Q8_0 rows with d = scale, plus an f32 correction per row and group)"
	}
	if c.DescAct {
		run += ", input columns sorted by g_idx group"
	}
	return c.Layout() + "; loaded losslessly as " + run
}
