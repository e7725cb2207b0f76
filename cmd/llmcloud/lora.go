// This file is `llmcloud lora`: merge an adapter into its base model (W' = W + scale·B·A, in
// the base's dtypes), convert an adapter between PEFT's directory and llama.cpp's GGUF form,
// make a random one (tests, benchmarks), and show one.
package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/tensor"
)

func init() {
	register("lora", "LoRA adapters: merge into a base model, convert PEFT <-> GGUF, random, show", runLoRA)
}

func runLoRA(args []string, stdout, stderr io.Writer) error {
	usage := "usage: llmcloud lora merge BASE ADAPTER OUT | convert BASE ADAPTER OUT | random BASE OUT [--rank R] | show BASE ADAPTER\n" +
		"ADAPTER: a PEFT directory (adapter_config.json + adapter_model.safetensors) or a llama.cpp GGUF adapter;\n" +
		"OUT: merge: *.gguf, *.bin or a Hugging Face directory (the base's dtypes); convert/random: *.gguf = llama.cpp's form, else a PEFT directory"
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return usagef("want a subcommand: merge, convert, random or show")
	}
	switch args[0] {
	case "merge":
		return runLoRAMerge(args[1:], stdout, stderr, usage)
	case "convert":
		return runLoRAConvert(args[1:], stdout, stderr, usage)
	case "random":
		return runLoRARandom(args[1:], stdout, stderr, usage)
	case "show":
		return runLoRAShow(args[1:], stdout, stderr, usage)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return usagef("unknown lora subcommand %q", args[0])
}

// openWithAdapter opens the base model and the adapter checked against it.
func openWithAdapter(basePath, adPath string) (*loader.Bundle, *lora.Adapter, error) {
	b, err := loader.Open(basePath, loader.Options{})
	if err != nil {
		return nil, nil, err
	}
	a, err := lora.Open(adPath, &b.Model.Config, b.Model.Weights)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, a, nil
}

func runLoRAMerge(args []string, stdout, stderr io.Writer, usage string) error {
	fs := newFlags("lora merge", stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usagef("lora merge: want BASE ADAPTER OUT, got %d arguments", len(pos))
	}
	b, a, err := openWithAdapter(pos[0], pos[1])
	if err != nil {
		return err
	}
	defer b.Close()
	merged, err := lora.Merge(b.Model.Weights, a, pos[1])
	if err != nil {
		return err
	}
	p := convert.FromBundle(b)
	for i := range p.Tensors {
		if t, ok := a.Pairs[p.Tensors[i].Name]; ok && t != nil {
			mt := merged[p.Tensors[i].Name]
			p.Tensors[i].Load = func() (*tensor.Tensor, error) { return mt, nil }
		}
	}
	opts := convert.Options{Warn: func(msg string) { fmt.Fprintln(stderr, "warning:", msg) }}
	if err := convert.Write(pos[2], p, opts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "merged %s (%d weights, rank %d) into %s: wrote %s\n", pos[1], len(a.Pairs), a.Rank(), pos[0], pos[2])
	return nil
}

// writeAdapter writes a as OUT's name asks: *.gguf llama.cpp's form, else a PEFT directory.
func writeAdapter(out string, a *lora.Adapter, b *loader.Bundle) error {
	if strings.HasSuffix(out, ".gguf") {
		return lora.WriteGGUF(out, a, b.Model.Config.Arch)
	}
	if a.Config.BaseModel == "" {
		a.Config.BaseModel = b.Path
	}
	return lora.WritePEFT(out, a, &b.Model.Config)
}

func runLoRAConvert(args []string, stdout, stderr io.Writer, usage string) error {
	fs := newFlags("lora convert", stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usagef("lora convert: want BASE ADAPTER OUT, got %d arguments", len(pos))
	}
	b, a, err := openWithAdapter(pos[0], pos[1])
	if err != nil {
		return err
	}
	defer b.Close()
	if err := writeAdapter(pos[2], a, b); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d weights, rank %d)\n", pos[2], len(a.Pairs), a.Rank())
	return nil
}

func runLoRARandom(args []string, stdout, stderr io.Writer, usage string) error {
	fs := newFlags("lora random", stderr)
	rank := fs.Int("rank", 8, "rank r")
	alpha := fs.Float64("alpha", 0, "lora_alpha (default: 2*rank)")
	targets := fs.String("target-modules", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "PEFT module names to adapt")
	amp := fs.Float64("amp", 0.02, "A and B values uniform in ±amp")
	seed := fs.Uint64("seed", 1, "random seed")
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("lora random: want BASE OUT, got %d arguments", len(pos))
	}
	if *alpha == 0 {
		*alpha = 2 * float64(*rank)
	}
	b, err := loader.Open(pos[0], loader.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	a, err := lora.Random(pos[1], &b.Model.Config, strings.Split(*targets, ","), *rank, *alpha, float32(*amp), *seed)
	if err != nil {
		return err
	}
	if err := writeAdapter(pos[1], a, b); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d weights, rank %d, alpha %g)\n", pos[1], len(a.Pairs), *rank, *alpha)
	return nil
}

func runLoRAShow(args []string, stdout, stderr io.Writer, usage string) error {
	if len(args) != 2 {
		fmt.Fprintln(stderr, usage)
		return usagef("lora show: want BASE ADAPTER, got %d arguments", len(args))
	}
	b, a, err := openWithAdapter(args[0], args[1])
	if err != nil {
		return err
	}
	defer b.Close()
	c := a.Config
	fmt.Fprintf(stdout, "adapter %s: r %d, lora_alpha %g, use_rslora %v, target_modules %v, base %q, %d weights\n",
		args[1], c.R, c.LoraAlpha, c.UseRSLoRA, c.TargetModules.List, c.BaseModel, len(a.Pairs))
	for _, n := range a.Names() {
		p := a.Pairs[n]
		fmt.Fprintf(stdout, "  %-24s rank %-3d scale %-8.4g A [%d %d] B [%d %d]\n", n, p.Rank, p.Scale, p.Rank, p.In, p.Out, p.Rank)
	}
	return nil
}
