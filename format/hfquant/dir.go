// This file writes an AWQ or GPTQ Hugging Face directory from a float one: each decoder
// linear quantized by a Quantizer (round to nearest for now; a calibrated quantizer plugs in
// the same way) and packed by Pack, the other tensors copied, config.json given its
// quantization_config, the tokenizer and generation files copied.
package hfquant

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/tensor"
)

// Quantizer makes the Linear of one weight (Hugging Face name, values [out, in]).
type Quantizer func(name string, w []float32, out, in int) (*Linear, error)

// RTNQuantizer is c's round-to-nearest quantizer (RTN).
func RTNQuantizer(c *Config) Quantizer {
	minZero := 0
	if c.V1Zeros() {
		minZero = 1
	}
	return func(_ string, w []float32, out, in int) (*Linear, error) {
		return RTN(w, out, in, c.Bits, c.GroupSize, minZero)
	}
}

// Quantizable reports whether the tensor name [out, in] is a decoder linear weight c can
// pack: 2-D, inside model layers, not a norm, in a multiple of the group size (and of the
// packing) and out a multiple of 8.
func Quantizable(c *Config, name string, shape []int) bool {
	if len(shape) != 2 || !strings.HasSuffix(name, ".weight") || !strings.Contains(name, "layers.") || strings.Contains(name, "norm") {
		return false
	}
	out, in := shape[0], shape[1]
	g := c.GroupSize
	if g < 0 {
		g = in
	}
	return out%8 == 0 && in%g == 0 && in%(32/c.Bits) == 0
}

// WriteDir reads the float Hugging Face directory src and writes dst (created; it must not be
// src) with every Quantizable linear quantized by q and packed under c. It returns the number
// of linears quantized.
func WriteDir(src, dst string, c *Config, q Quantizer) (int, error) {
	if a, b := filepath.Clean(src), filepath.Clean(dst); a == b {
		return 0, fmt.Errorf("hfquant: output %s is the input directory", dst)
	}
	cfg, err := hfdir.ReadConfig(filepath.Join(src, hfdir.ConfigFile))
	if err != nil {
		return 0, err
	}
	if _, had := cfg.Raw["quantization_config"]; had {
		return 0, fmt.Errorf("hfquant: %s is quantized already (quantization_config in config.json)", src)
	}
	set, err := safetensors.OpenDir(src)
	if err != nil {
		return 0, err
	}
	defer set.Close()
	names := make([]string, 0, len(set.Tensors))
	for n := range set.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	var outs []tensor.Tensor
	count := 0
	for _, name := range names {
		t := set.Tensors[name]
		if !Quantizable(c, name, t.Shape) {
			outs = append(outs, *t)
			continue
		}
		w, err := t.Float32()
		if err != nil {
			return 0, err
		}
		l, err := q(name, w, t.Shape[0], t.Shape[1])
		if err != nil {
			return 0, fmt.Errorf("hfquant: %s: %w", name, err)
		}
		ps, err := Pack(c, strings.TrimSuffix(name, ".weight"), l)
		if err != nil {
			return 0, err
		}
		outs = append(outs, ps...)
		count++
	}
	if count == 0 {
		return 0, fmt.Errorf("hfquant: %s has no linear weight that %s with group_size %d can pack", src, c.Method, c.GroupSize)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, fmt.Errorf("hfquant: %w", err)
	}
	if err := safetensors.WriteSharded(dst, outs, map[string]string{"format": "pt"}, 5_000_000_000); err != nil {
		return 0, err
	}
	cfg.Raw["quantization_config"] = c.Raw()
	cfg.TorchDtype = "float16"
	if err := hfdir.WriteConfig(filepath.Join(dst, hfdir.ConfigFile), cfg); err != nil {
		return 0, err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return 0, fmt.Errorf("hfquant: %w", err)
	}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || n == hfdir.ConfigFile || strings.HasSuffix(n, ".safetensors") || n == safetensors.IndexFile {
			continue
		}
		if err := copyFile(filepath.Join(src, n), filepath.Join(dst, n)); err != nil {
			return 0, err
		}
	}
	return count, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("hfquant: %w", err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("hfquant: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("hfquant: %w", err)
	}
	return out.Close()
}
