// The quantize command: llmcloud quantize IN OUT --type T [--method M] [--calibration TEXT]:
// a model written as GGUF with calibrated 4/6/8-bit weights; with --format awq|gptq, a Hugging
// Face AWQ/GPTQ checkpoint directory instead (quantize_hf.go). Calibration statistics come from
// running the model's graph over the text (package quant/calib); the methods are package
// quant's: rtn (what `convert --type` writes, byte for byte), imatrix, awq, gptq.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/hfquant"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/quant"
	"github.com/llmcloud/llmcloud/quant/calib"
	"github.com/llmcloud/llmcloud/tensor"
)

func init() {
	register("quantize", "quantize a model to GGUF or HF AWQ/GPTQ with calibration (imatrix, AWQ, GPTQ) or round-to-nearest", runQuantize)
}

// minCalibTokens is the least calibration a method accepts: imatrix one chunk; AWQ 512 tokens
// of samples; GPTQ as many tokens as the widest input it inverts a Hessian for (fewer leave
// X^T X rank-deficient: GPTQ then fits the calibration text, not the model).
func minCalibTokens(method string, ctx, widest int) int {
	switch method {
	case "awq":
		return max(ctx, 512)
	case "gptq":
		return max(ctx, widest)
	}
	return ctx
}

func runQuantize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("quantize", stderr)
	format := fs.String("format", "gguf", "output: gguf (a file; --type), or awq / gptq (a Hugging Face AWQ/GPTQ checkpoint directory)")
	typ := fs.String("type", "", "GGUF weight type: q4_0, q4_k, q4_k_m, q6_k, q8_0 (required with --format gguf)")
	method := fs.String("method", "rtn", "rtn (round to nearest, as convert --type), imatrix (gguf only), awq or gptq")
	calText := fs.String("calibration", "", "calibration text file (imatrix, awq, gptq; never the evaluation text)")
	calTokens := fs.Int("calib-tokens", 8192, "calibration tokens to use from the start of the text")
	ctx := fs.Int("ctx", 512, "tokens per calibration chunk (each starts with BOS)")
	group := fs.Int("group-size", 0, "quantization group: GGUF block types fix it (q4_0, q8_0, q4_k: 32; q6_k: 16), 0 or that value; awq/gptq: input columns per scale and zero (0: 128; -1: one group per row, gptq only)")
	bits := fs.Int("bits", 4, "awq/gptq: bits per weight, 4 (awq, gptq) or 8 (gptq)")
	descAct := fs.Bool("desc-act", false, "--format gptq --method gptq: act-order (columns by decreasing Hessian diagonal, written with g_idx)")
	gptqBlock := fs.Int("gptq-block", 0, "GPTQ lazy-update batch in columns (0: 128, 256 for GGUF K-quants)")
	damp := fs.Float64("damp", 0.01, "GPTQ damping, relative to the Hessian's mean diagonal")
	imOut := fs.String("imatrix-out", "", "write the importance matrix (llama.cpp's imatrix .dat layout) here")
	imIn := fs.String("imatrix", "", "read the importance matrix from this .dat file instead of calibrating (imatrix method)")
	tok := fs.String("tokenizer", "", "tokenizer to use instead of the model's own")
	var tf tuneFlags
	fs.IntVar(&tf.steps, "tune-steps", 0, "after the method, fine-tune every block's float16 scales for this many steps towards the float model's token distributions on the calibration text (KL; 0: off; gguf only)")
	fs.Float64Var(&tf.lr, "tune-lr", 1e-3, "--tune-steps: Adam's learning rate on the relative scale factors")
	fs.IntVar(&tf.batch, "tune-batch", 4, "--tune-steps: rows per step")
	fs.IntVar(&tf.seq, "tune-seq", 256, "--tune-steps: tokens per row (each starts with BOS)")
	fs.IntVar(&tf.tokens, "tune-tokens", 65536, "--tune-steps: calibration tokens to tune on, from the start of the text (the last rows are held out to pick the best step)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud quantize IN OUT --type q4_0|q4_k|q4_k_m|q6_k|q8_0 [--method rtn|imatrix|awq|gptq]")
		fmt.Fprintln(stderr, "       [--calibration TEXT] [--calib-tokens N] [--group-size N] [--imatrix-out FILE] [--imatrix FILE]")
		fmt.Fprintln(stderr, "       [--tune-steps N]   (then fine-tune the blocks' scales towards IN's token distributions on TEXT)")
		fmt.Fprintln(stderr, "       llmcloud quantize IN OUTDIR --format awq|gptq [--bits 4|8] [--group-size 128] [--desc-act]")
		fmt.Fprintln(stderr, "       [--method rtn|awq|gptq] [--calibration TEXT]")
		fmt.Fprintln(stderr, "OUT is GGUF (llama.cpp loads it); OUTDIR a Hugging Face AWQ/GPTQ checkpoint; see docs/quantization.md")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want IN and OUT, got %d arguments", len(pos))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	in, out := pos[0], pos[1]
	var dt tensor.DType
	var hfc *hfquant.Config
	switch *format {
	case "gguf":
		for _, f := range []string{"bits", "desc-act"} {
			if set[f] {
				return usagef("--%s is for --format awq or gptq (a GGUF --type fixes its bits)", f)
			}
		}
		if !strings.HasSuffix(out, ".gguf") {
			return usagef("OUT %s: --format gguf writes GGUF (a name ending in .gguf)", out)
		}
		switch *typ {
		case "q4_0", "q4_k", "q6_k", "q8_0":
			dt, _ = tensor.Parse(*typ)
		case "q4_k_m":
			dt = tensor.Q4_K
		default:
			return usagef("--type %q: want q4_0, q4_k, q4_k_m, q6_k or q8_0", *typ)
		}
		if fixed := map[tensor.DType]int{tensor.Q4_0: 32, tensor.Q8_0: 32, tensor.Q4_K: 32, tensor.Q6_K: 16}[dt]; *group != 0 && *group != fixed {
			return usagef("--group-size %d: %s's group is fixed at %d by the GGUF block format", *group, *typ, fixed)
		}
	case "awq", "gptq":
		if *typ != "" {
			return usagef("--type %s is for --format gguf; --format %s takes --bits and --group-size", *typ, *format)
		}
		if strings.HasSuffix(out, ".gguf") {
			return usagef("OUT %s: --format %s writes a Hugging Face directory, not a .gguf file", out, *format)
		}
		if *group == 0 {
			*group = 128
		}
		if *method == "imatrix" {
			return usagef("--method imatrix writes GGUF block headers; --format %s takes rtn, awq or gptq", *format)
		}
		if *descAct && (*format != "gptq" || *method != "gptq") {
			return usagef("--desc-act is GPTQ's act-order: it needs --format gptq --method gptq")
		}
		hfc = &hfquant.Config{Method: *format, Bits: *bits, GroupSize: *group, ZeroPoint: true, Version: "gemm",
			CheckpointFormat: "gptq", DescAct: *descAct}
		// Validate through the reader, so that what is written is what it accepts.
		if _, _, err := hfquant.FromRaw(map[string]any{"quantization_config": toJSONNumbers(hfc.Raw())}); err != nil {
			return usagef("%v", err)
		}
	default:
		return usagef("--format %q: want gguf, awq or gptq", *format)
	}
	switch *method {
	case "rtn", "imatrix", "awq", "gptq":
	default:
		return usagef("--method %q: want rtn, imatrix, awq or gptq", *method)
	}
	needCal := *method != "rtn" && !(*method == "imatrix" && *imIn != "")
	if needCal && *calText == "" {
		return usagef("--method %s needs --calibration TEXT", *method)
	}
	if tf.steps < 0 || tf.lr <= 0 || tf.batch < 1 || tf.seq < 2 || tf.tokens < 1 {
		return usagef("--tune-steps %d, --tune-lr %g, --tune-batch %d, --tune-seq %d, --tune-tokens %d: want steps >= 0 and the others positive (seq >= 2)",
			tf.steps, tf.lr, tf.batch, tf.seq, tf.tokens)
	}
	if tf.steps > 0 && *calText == "" {
		return usagef("--tune-steps needs --calibration TEXT")
	}
	if tf.steps > 0 && *format != "gguf" {
		return usagef("--tune-steps tunes GGUF block scales; --format %s has none", *format)
	}
	if *imIn != "" && *method != "imatrix" {
		return usagef("--imatrix FILE is read by --method imatrix")
	}
	b, err := loader.Open(in, loader.Options{Tokenizer: *tok})
	if err != nil {
		return err
	}
	defer b.Close()
	p := convert.FromBundle(b)
	cal := quant.Calibration{}
	if *imIn != "" {
		im, err := calib.ReadImatrix(*imIn)
		if err != nil {
			return err
		}
		cal.Imp = im.Values
	}
	if needCal {
		if cal, err = calibrate(b, *method, *calText, *calTokens, *ctx, *imOut, stderr); err != nil {
			return err
		}
	}
	if hfc != nil {
		return quantizeHF(b, p, cal, hfc, hfOptions{in: in, out: out, method: *method,
			gptq: quant.GPTQIntOptions{Damp: *damp, Block: *gptqBlock, ActOrder: *descAct}}, stdout, stderr)
	}
	hook, err := quant.Prepare(p, cal, quant.Options{Method: *method, Type: dt,
		GPTQ: quant.GPTQOptions{Damp: *damp, Block: *gptqBlock},
		Log:  func(msg string) { fmt.Fprintln(stderr, msg) }})
	if err != nil {
		return err
	}
	n2 := 0
	for _, t := range p.Tensors {
		if len(t.Shape) == 2 {
			n2++
		}
	}
	bar := progressbar.NewOptions(n2, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("quantize "+*method),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetWidth(30))
	opts := convert.Options{Type: *typ, Warn: func(msg string) { fmt.Fprintln(stderr, "warning:", msg) }}
	loads := make([]func() (*tensor.Tensor, error), len(p.Tensors)) // without the bar, for --tune-steps' second write
	for i := range p.Tensors {
		t := &p.Tensors[i]
		loads[i] = t.Load
		if len(t.Shape) == 2 {
			load := t.Load
			t.Load = func() (*tensor.Tensor, error) { bar.Add(1); return load() }
		}
	}
	if hook != nil {
		opts.Quantize = hook
	}
	first := out
	if tf.steps > 0 {
		first = out + ".untuned.tmp"
		defer os.Remove(first)
	}
	if err := convert.WriteGGUF(first, p, opts); err != nil {
		return err
	}
	bar.Finish()
	fmt.Fprintln(stderr)
	if tf.steps > 0 {
		for i := range p.Tensors {
			p.Tensors[i].Load = loads[i]
		}
		if err := tuneScales(b, p, opts, first, out, *calText, tf, stderr); err != nil {
			return err
		}
		*method += "+tune"
	}
	fmt.Fprintf(stdout, "wrote %s (%s, method %s, %d tensors) from %s\n", out, *typ, *method, len(p.Tensors), in)
	return nil
}

// calibrate runs b's model over the first calTokens tokens of the text file calText (chunks
// of ctx) and collects what method needs; imOut, if set, receives the importance matrix.
func calibrate(b *loader.Bundle, method, calText string, calTokens, ctx int, imOut string, stderr io.Writer) (quant.Calibration, error) {
	var cal quant.Calibration
	text, err := os.ReadFile(calText)
	if err != nil {
		return cal, err
	}
	ids := b.Tok.Encode(string(text), true, false)
	if b.Tok.BOS() < 0 {
		return cal, fmt.Errorf("the tokenizer has no BOS token; calibration chunks start with one")
	}
	c := ctx
	if n := b.Model.Config.CtxLen; n > 0 && c > n {
		c = n
	}
	widest := max(b.Model.Config.Dim, b.Model.Config.FFN)
	need := minCalibTokens(method, c, widest)
	need = (need + c - 1) / c * c // whole chunks
	if calTokens < need {
		return cal, fmt.Errorf("--calib-tokens %d: --method %s needs at least %d calibration tokens (whole chunks of %d)", calTokens, method, need, c)
	}
	use := min(len(ids), calTokens)
	if use/c*c < need {
		return cal, fmt.Errorf("calibration text %s: %d tokens; --method %s needs at least %d (whole chunks of %d)",
			calText, len(ids), method, need, c)
	}
	ids = ids[:use/c*c]
	hess, samples := quant.Needs(method)
	nSamples := 0
	if samples {
		nSamples = 512
	}
	bar := progressbar.NewOptions(len(ids), progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("calibrate"), progressbar.OptionShowCount(),
		progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetWidth(30))
	col, err := calib.Run(b.Model, ids, b.Tok.BOS(), calib.Options{Ctx: c, Hessian: hess, Samples: nSamples,
		Progress: func(done, _ int) { bar.Set(done) }})
	bar.Finish()
	fmt.Fprintln(stderr)
	if err != nil {
		return cal, err
	}
	im := col.Imatrix(calText)
	cal.Imp, cal.Stats = im.Values, col.ByW
	if imOut != "" {
		if err := im.WriteFile(imOut); err != nil {
			return cal, err
		}
		fmt.Fprintf(stderr, "wrote the importance matrix of %d weights to %s\n", len(im.Values), imOut)
	}
	return cal, nil
}
