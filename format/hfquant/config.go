// Package hfquant reads and writes Hugging Face AWQ and GPTQ checkpoints: the
// quantization_config of config.json, the packed int32 tensors of each quantized linear
// (qweight, qzeros, scales, g_idx), their unpacking into codes, scales and zeros (Linear),
// the lossless repack into llmcloud's zero-corrected Q4_0Z / Q8_0Z weights (tensor/groupzero.go),
// and the packing of codes, scales and zeros back into either layout (pack.go).
//
// Layouts (learned from the published AutoAWQ / AutoGPTQ / GPTQModel / transformers sources):
//
//	AWQ (version "gemm", 4 bits): qweight int32 [in, out/8], qzeros int32 [in/G, out/8],
//	  scales fp16 [in/G, out]. Packing runs along out: the 8 nibbles of word c (low to high)
//	  hold out columns 8c + {0, 2, 4, 6, 1, 3, 5, 7}. w[o][i] = s·(q − z), z as stored.
//	GPTQ (bits 4 or 8): qweight int32 [in·bits/32, out], packed along in (value p of word r,
//	  low bits first, is in column r·32/bits + p); qzeros int32 [ngroups, out·bits/32] packed
//	  along out the same way; scales fp16 [ngroups, out]; g_idx int32 [in] (the group of each
//	  in column; c/G unless desc_act reordered them). checkpoint_format "gptq" (v1, AutoGPTQ,
//	  the default) stores z − 1 (read back as stored + 1); "gptq_v2" (GPTQModel) stores z.
//	  w[o][i] = s[g][o]·(q − z[g][o]) with g = g_idx[i].
package hfquant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Config is config.json's quantization_config for AWQ or GPTQ.
type Config struct {
	Method           string // "awq" or "gptq"
	Bits             int    // 4 (AWQ); 4 or 8 (GPTQ)
	GroupSize        int    // input columns per group; -1: one group per row (GPTQ)
	DescAct          bool   // GPTQ act-order: g_idx may be any assignment
	Sym              bool   // GPTQ symmetric (zeros all 2^(bits-1))
	ZeroPoint        bool   // AWQ zero_point (true: asymmetric)
	Version          string // AWQ packing version: "gemm"
	CheckpointFormat string // GPTQ: "gptq" (v1, zeros stored minus one) or "gptq_v2"
	NotConverted     []string
}

// V1Zeros reports whether stored GPTQ zeros are z − 1 (checkpoint_format "gptq", the default).
func (c *Config) V1Zeros() bool { return c.Method == "gptq" && c.CheckpointFormat != "gptq_v2" }

// Layout is a one-line description of the packing, for inspect.
func (c *Config) Layout() string {
	g := strconv.Itoa(c.GroupSize)
	if c.GroupSize < 0 {
		g = "per-channel"
	}
	switch c.Method {
	case "awq":
		return fmt.Sprintf("awq %d-bit, group %s, zero_point %v, version %s: qweight int32 [in, out/8] (nibble order 0,2,4,6,1,3,5,7), qzeros int32 [in/G, out/8], scales fp16 [in/G, out]",
			c.Bits, g, c.ZeroPoint, c.Version)
	default:
		f := c.CheckpointFormat
		if f == "" {
			f = "gptq"
		}
		return fmt.Sprintf("gptq %d-bit, group %s, desc_act %v, sym %v, checkpoint_format %s: qweight int32 [in*%d/32, out], qzeros int32 [groups, out*%d/32]%s, scales fp16 [groups, out], g_idx int32 [in]",
			c.Bits, g, c.DescAct, c.Sym, f, c.Bits, c.Bits, map[bool]string{true: " (stored zero-1)", false: ""}[c.V1Zeros()])
	}
}

// FromRaw reads quantization_config from config.json's decoded fields (numbers as
// json.Number, as hfdir keeps them). ok is false when there is none or its quant_method is
// not awq or gptq (e.g. gpt-oss's mxfp4, read elsewhere).
func FromRaw(raw map[string]any) (c *Config, ok bool, err error) {
	q, _ := raw["quantization_config"].(map[string]any)
	if q == nil {
		return nil, false, nil
	}
	method, _ := q["quant_method"].(string)
	if method != "awq" && method != "gptq" {
		return nil, false, nil
	}
	c = &Config{Method: method, Version: "gemm", ZeroPoint: true, Sym: true}
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("quantization_config.%s = %v: %s", field, v, why)
	}
	num := func(field string, def int) (int, error) {
		v, ok := q[field]
		if !ok || v == nil {
			return def, nil
		}
		var n int64
		var e error
		switch x := v.(type) {
		case json.Number:
			n, e = x.Int64()
		case float64:
			n = int64(x)
			if float64(n) != x {
				e = fmt.Errorf("not an integer")
			}
		case int:
			n = int64(x)
		default:
			e = fmt.Errorf("not a number")
		}
		if e != nil {
			return 0, bad(field, v, "want an integer")
		}
		return int(n), nil
	}
	flag := func(field string, def bool) (bool, error) {
		v, ok := q[field]
		if !ok || v == nil {
			return def, nil
		}
		b, isBool := v.(bool)
		if !isBool {
			return false, bad(field, v, "want true or false")
		}
		return b, nil
	}
	str := func(field, def string) (string, error) {
		v, ok := q[field]
		if !ok || v == nil {
			return def, nil
		}
		s, isStr := v.(string)
		if !isStr {
			return "", bad(field, v, "want a string")
		}
		return s, nil
	}
	if c.Bits, err = num("bits", 4); err != nil {
		return nil, true, err
	}
	if method == "awq" {
		if _, has := q["w_bit"]; has && q["bits"] == nil { // AutoAWQ's own quant_config name
			if c.Bits, err = num("w_bit", 4); err != nil {
				return nil, true, err
			}
		}
	}
	if c.GroupSize, err = num("group_size", 128); err != nil {
		return nil, true, err
	}
	if _, has := q["q_group_size"]; has && q["group_size"] == nil {
		if c.GroupSize, err = num("q_group_size", 128); err != nil {
			return nil, true, err
		}
	}
	if c.DescAct, err = flag("desc_act", false); err != nil {
		return nil, true, err
	}
	if c.Sym, err = flag("sym", true); err != nil {
		return nil, true, err
	}
	if c.ZeroPoint, err = flag("zero_point", true); err != nil {
		return nil, true, err
	}
	if c.Version, err = str("version", "gemm"); err != nil {
		return nil, true, err
	}
	if c.CheckpointFormat, err = str("checkpoint_format", "gptq"); err != nil {
		return nil, true, err
	}
	if l, isList := q["modules_to_not_convert"].([]any); isList {
		for _, v := range l {
			if s, isStr := v.(string); isStr {
				c.NotConverted = append(c.NotConverted, s)
			}
		}
	}
	switch {
	case method == "awq" && c.Bits != 4:
		return nil, true, bad("bits", c.Bits, "AWQ checkpoints are read with 4 bits only")
	case method == "gptq" && c.Bits != 4 && c.Bits != 8:
		return nil, true, bad("bits", c.Bits, "GPTQ checkpoints are read with 4 or 8 bits")
	case method == "awq" && c.Version != "gemm" && c.Version != "GEMM":
		return nil, true, bad("version", c.Version, `only AWQ's "gemm" packing is supported`)
	case method == "gptq" && c.CheckpointFormat != "gptq" && c.CheckpointFormat != "gptq_v2":
		return nil, true, bad("checkpoint_format", c.CheckpointFormat, `want "gptq" or "gptq_v2"`)
	case c.GroupSize == 0 || c.GroupSize < -1 || (c.GroupSize == -1 && method == "awq"):
		return nil, true, bad("group_size", c.GroupSize, "want a positive number of input columns (or -1: per channel, GPTQ)")
	}
	return c, true, nil
}

// Raw is the quantization_config object for c, as written by Pack's writers.
func (c *Config) Raw() map[string]any {
	if c.Method == "awq" {
		return map[string]any{"quant_method": "awq", "bits": c.Bits, "group_size": c.GroupSize,
			"zero_point": c.ZeroPoint, "version": "gemm", "modules_to_not_convert": nil}
	}
	f := c.CheckpointFormat
	if f == "" {
		f = "gptq"
	}
	return map[string]any{"quant_method": "gptq", "bits": c.Bits, "group_size": c.GroupSize,
		"desc_act": c.DescAct, "sym": c.Sym, "checkpoint_format": f, "damp_percent": 0.01,
		"true_sequential": true, "static_groups": false}
}

// QuantizeConfigFile is where older AutoGPTQ checkpoints keep their quantization settings
// instead of config.json's quantization_config.
const QuantizeConfigFile = "quantize_config.json"

// ForDir is FromRaw for the model directory dir whose config.json decoded to raw: when raw has
// no quantization_config, dir's quantize_config.json (if any) is read instead, its
// quant_method defaulting to gptq (AutoGPTQ wrote none).
func ForDir(dir string, raw map[string]any) (c *Config, ok bool, err error) {
	if _, has := raw["quantization_config"]; has {
		return FromRaw(raw)
	}
	path := filepath.Join(dir, QuantizeConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("hfquant: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, false, fmt.Errorf("hfquant: %s: bad JSON: %v", path, err)
	}
	if _, has := m["quant_method"]; !has {
		m["quant_method"] = "gptq"
	}
	if c, ok, err = FromRaw(map[string]any{"quantization_config": m}); err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	return c, ok, nil
}
