// Tests of AWQ / GPTQ checkpoints end to end: a float Hugging Face model quantized by
// hfquant.WriteDir (as `llmcloud quantize-hf` does) opens, and its logits (prefill and decode)
// match the float model whose linears hold the dequantized values; broken checkpoints give an
// error naming the quantization_config field and the tensor.
package loader_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/hfquant"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

// writeQuantHF writes a small float llama as HF, then its c-quantized form and a float
// directory whose linears are the dequantized values; it returns those two.
func writeQuantHF(t *testing.T, c *hfquant.Config) (quant, deq string) {
	t.Helper()
	return writeQuantHFWith(t, c, hfquant.RTNQuantizer(c))
}

// actOrder wraps RTN as GPTQ's act-order does: the groups are formed over a (here random)
// column order, so g_idx is not i/G.
func actOrder(c *hfquant.Config) hfquant.Quantizer {
	rtn := hfquant.RTNQuantizer(c)
	return func(name string, w []float32, out, in int) (*hfquant.Linear, error) {
		perm := rand.New(rand.NewPCG(uint64(in), uint64(out))).Perm(in)
		pw := make([]float32, len(w))
		for o := 0; o < out; o++ {
			for j, src := range perm {
				pw[o*in+j] = w[o*in+src]
			}
		}
		l, err := rtn(name, pw, out, in)
		if err != nil {
			return nil, err
		}
		codes := make([]uint8, len(l.Codes))
		l.GIdx = make([]int32, in)
		for j, src := range perm {
			l.GIdx[src] = int32(j / l.Group)
			for o := 0; o < out; o++ {
				codes[o*in+src] = l.Codes[o*in+j]
			}
		}
		l.Codes = codes
		return l, nil
	}
}

func writeQuantHFWith(t *testing.T, c *hfquant.Config, q hfquant.Quantizer) (quant, deq string) {
	t.Helper()
	o := synth.Options{Arch: "llama", Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, FFN: 256, Seed: 7, Std: 0.05}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	float := filepath.Join(root, "float")
	if err := convert.WriteHF(float, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	lin := map[string]*hfquant.Linear{}
	rtn := q
	quant, deq = filepath.Join(root, "quant"), filepath.Join(root, "deq")
	n, err := hfquant.WriteDir(float, quant, c, func(name string, w []float32, out, in int) (*hfquant.Linear, error) {
		l, err := rtn(name, w, out, in)
		lin[name] = l
		return l, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2*7 {
		t.Fatalf("%d linears quantized, want 14", n)
	}
	set, err := safetensors.OpenDir(float)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	var ts []tensor.Tensor
	for name, tt := range set.Tensors {
		if l := lin[name]; l != nil {
			w := l.Float32()
			d := make([]byte, 4*len(w))
			for i, v := range w {
				u := math.Float32bits(v)
				d[4*i], d[4*i+1], d[4*i+2], d[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
			}
			ts = append(ts, tensor.Tensor{Name: name, Type: tensor.F32, Shape: tt.Shape, Data: d})
			continue
		}
		ts = append(ts, *tt)
	}
	if err := safetensors.WriteSharded(deq, ts, nil, 1<<40); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(float, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(deq, f), b, 0o644)
	}
	return quant, deq
}

func TestQuantHFLogits(t *testing.T) {
	for _, c := range []*hfquant.Config{
		{Method: "awq", Bits: 4, GroupSize: 64, ZeroPoint: true, Version: "gemm"},
		{Method: "gptq", Bits: 4, GroupSize: 128, CheckpointFormat: "gptq"},
		{Method: "gptq", Bits: 8, GroupSize: 32, CheckpointFormat: "gptq"},
		{Method: "gptq", Bits: 4, GroupSize: 32, DescAct: true, CheckpointFormat: "gptq"},
	} {
		t.Run(fmt.Sprintf("%s%d-desc_act=%v", c.Method, c.Bits, c.DescAct), func(t *testing.T) {
			q := hfquant.RTNQuantizer(c)
			if c.DescAct {
				q = actOrder(c)
			}
			qdir, ddir := writeQuantHFWith(t, c, q)
			qb, err := loader.Open(qdir, loader.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer qb.Close()
			db, err := loader.Open(ddir, loader.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			want := tensor.Q4_0Z
			if c.Bits == 8 {
				want = tensor.Q8_0Z
			}
			if w := qb.Model.Weights["blk.0.attn_q.weight"]; w == nil || w.Type != want || (w.Zero.Perm != nil) != c.DescAct {
				t.Fatalf("blk.0.attn_q.weight: %v, want %s (column order permuted: %v)", w, want, c.DescAct)
			}
			toks := []int{1, 40, 77, 120, 3, 200, 9, 64, 31, 250}
			qc, dc := qb.Model.NewCache(32), db.Model.NewCache(32)
			ql, err := qb.Model.Forward(qc, toks, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			dl, err := db.Model.Forward(dc, toks, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			q1, _ := qb.Model.Decode(qc, 5) // decode path too
			d1, _ := db.Model.Decode(dc, 5)
			ql, dl = append(ql, q1...), append(dl, d1...)
			var maxd, maxv float64
			for i := range dl {
				maxd = max(maxd, math.Abs(float64(ql[i]-dl[i])))
				maxv = max(maxv, math.Abs(float64(dl[i])))
			}
			// The quantized model quantizes activations to int8 per block (as Q4_0/Q8_0 do);
			// the float one does not.
			t.Logf("%s %d-bit: max |logit diff| %.4g, max |logit| %.4g", c.Method, c.Bits, maxd, maxv)
			if maxd > 0.02*maxv+0.01 {
				t.Fatalf("max |logit diff| %g against max |logit| %g", maxd, maxv)
			}
		})
	}
}

// TestQuantHFErrors: quantization_config against tensors that disagree names both.
func TestQuantHFErrors(t *testing.T) {
	c := &hfquant.Config{Method: "gptq", Bits: 4, GroupSize: 64, CheckpointFormat: "gptq"}
	qdir, _ := writeQuantHF(t, c)
	cfg, _ := os.ReadFile(filepath.Join(qdir, "config.json"))
	cases := []struct {
		name string
		from string
		to   string
		want []string
	}{
		{"bits", `"bits": 4`, `"bits": 8`, []string{"quantization_config.bits = 8", "down_proj.qweight has shape [32 128]", "g_idx has shape [256]"}},
		{"group size", `"group_size": 64`, `"group_size": 32`, []string{"quantization_config.group_size = 32", "down_proj.scales has shape [4 128]"}},
		{"shape against config.json", `"intermediate_size": 256`, `"intermediate_size": 192`, []string{"config.json implies", "unpacked from", "qweight", "quantization_config.bits = 4"}},
		{"unsupported bits", `"bits": 4`, `"bits": 3`, []string{"quantization_config.bits = 3"}},
		{"bad method field", `"desc_act": false`, `"desc_act": "no"`, []string{"quantization_config.desc_act"}},
		{"checkpoint format", `"checkpoint_format": "gptq"`, `"checkpoint_format": "marlin"`, []string{"quantization_config.checkpoint_format"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !bytes.Contains(cfg, []byte(tc.from)) {
				t.Fatalf("config.json lacks %s:\n%s", tc.from, cfg)
			}
			os.WriteFile(filepath.Join(qdir, "config.json"), bytes.Replace(cfg, []byte(tc.from), []byte(tc.to), 1), 0o644)
			defer os.WriteFile(filepath.Join(qdir, "config.json"), cfg, 0o644)
			b, err := loader.Open(qdir, loader.Options{})
			if err == nil {
				b.Close()
				t.Fatal("opened")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestQuantHFQuantizeConfigFile: an older AutoGPTQ checkpoint keeps its settings in
// quantize_config.json (no quant_method) instead of config.json's quantization_config.
func TestQuantHFQuantizeConfigFile(t *testing.T) {
	c := &hfquant.Config{Method: "gptq", Bits: 4, GroupSize: 64, CheckpointFormat: "gptq"}
	qdir, _ := writeQuantHF(t, c)
	path := filepath.Join(qdir, "config.json")
	raw, _ := os.ReadFile(path)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	q := m["quantization_config"].(map[string]any)
	delete(m, "quantization_config")
	delete(q, "quant_method")
	for name, v := range map[string]any{"config.json": m, "quantize_config.json": q} {
		b, _ := json.Marshal(v)
		os.WriteFile(filepath.Join(qdir, name), b, 0o644)
	}
	b, err := loader.Open(qdir, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if w := b.Model.Weights["blk.1.ffn_down.weight"]; w == nil || w.Type != tensor.Q4_0Z {
		t.Fatalf("blk.1.ffn_down.weight: %v, want Q4_0Z", w)
	}
}
