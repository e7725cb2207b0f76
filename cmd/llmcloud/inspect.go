// The inspect command: llmcloud inspect [FILE] [--json] describes a GGUF file, a Hugging Face
// directory or a llama2.c checkpoint (no FILE: the built-in default model): format, architecture and config, every tensor (name,
// shape, dtype, bytes) as stored in the file, total parameters and bytes, metadata (long
// arrays summarized) and a tokenizer summary.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/format/llama2c"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/tokenizer"
)

func init() {
	register("inspect", "describe a model file (default: the built-in model): config, tensors, metadata, tokenizer", runInspect)
}

type inspectTensor struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Type  string `json:"dtype"`
	Bytes int64  `json:"bytes"`
}

type inspectMeta struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

type inspectTok struct {
	Model    string `json:"model"`
	Pre      string `json:"pre,omitempty"`
	Tokens   int    `json:"tokens"`
	Merges   int    `json:"merges,omitempty"`
	BOS      string `json:"bos,omitempty"`
	EOS      string `json:"eos,omitempty"`
	AddBOS   bool   `json:"add_bos"`
	Template bool   `json:"chat_template"`
}

type inspectReport struct {
	Path        string          `json:"path"`
	Format      string          `json:"format"`
	Arch        string          `json:"architecture,omitempty"`
	Config      *model.Config   `json:"config,omitempty"`
	LoadError   string          `json:"load_error,omitempty"`
	Quant       string          `json:"quantization,omitempty"` // HF AWQ/GPTQ layout (quantize_hf.go)
	Tensors     []inspectTensor `json:"tensors"`
	TotalParams int64           `json:"total_params"`
	TotalBytes  int64           `json:"total_bytes"`
	Metadata    []inspectMeta   `json:"metadata,omitempty"`
	Tokenizer   *inspectTok     `json:"tokenizer,omitempty"`
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", stderr)
	asJSON := fs.Bool("json", false, "machine-readable output")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud inspect [FILE] [--json]")
		fmt.Fprintln(stderr, "FILE: a GGUF file, a Hugging Face directory or a llama2.c .bin (default: the built-in default model)")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("want one FILE (GGUF, Hugging Face directory or llama2.c .bin) or none (the built-in default model), got %d arguments", len(pos))
	}
	var path string
	if len(pos) == 1 {
		path = pos[0]
	} else if path, err = defaultModel(textLog(stderr)); err != nil {
		return err
	}
	r, err := inspect(path)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		printInspect(stdout, r)
	}
	if r.LoadError != "" {
		// The report is printed (it helps find what is wrong), but the exit status says the
		// file is not a usable model.
		return fmt.Errorf("inspect: %s cannot be loaded as a model: %s", path, r.LoadError)
	}
	return nil
}

func inspect(path string) (*inspectReport, error) {
	f, err := loader.Detect(path)
	if err != nil {
		return nil, err
	}
	r := &inspectReport{Path: path, Format: string(f)}
	add := func(t *tensor.Tensor) {
		r.Tensors = append(r.Tensors, inspectTensor{Name: t.Name, Shape: t.Shape, Type: t.Type.String(), Bytes: int64(len(t.Data))})
		r.TotalParams += int64(t.Elems())
		r.TotalBytes += int64(len(t.Data))
	}
	switch f {
	case loader.GGUF:
		g, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		defer g.Close()
		for i := range g.Tensors {
			add(&g.Tensors[i])
		}
		for _, kv := range g.KVs {
			r.Metadata = append(r.Metadata, inspectMeta{Key: kv.Key, Type: metaType(kv.Value), Value: summarize(kv.Value)})
		}
		r.Arch, _ = g.String("general.architecture")
	case loader.HF:
		set, err := safetensors.OpenDir(path)
		if err != nil {
			return nil, err
		}
		defer set.Close()
		for _, file := range set.Files {
			for i := range file.Tensors {
				add(&file.Tensors[i])
			}
		}
		if c, err := hfdir.ReadConfig(filepath.Join(path, hfdir.ConfigFile)); err == nil {
			r.Arch = c.ModelType
			r.Quant = hfQuantLayout(path, c.Raw)
			keys := make([]string, 0, len(c.Raw))
			for k := range c.Raw {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				b, _ := json.Marshal(c.Raw[k])
				r.Metadata = append(r.Metadata, inspectMeta{Key: "config." + k, Type: "json", Value: clip(string(b))})
			}
		}
	case loader.Llama2C:
		l, err := llama2c.Open(path)
		if err != nil {
			return nil, err
		}
		defer l.Close()
		for i := range l.Tensors {
			add(&l.Tensors[i])
		}
		h := l.Header
		r.Arch = model.ConfigFromLlama2C(h).Arch
		for _, kv := range []struct {
			k string
			v any
		}{{"dim", h.Dim}, {"hidden_dim", h.HiddenDim}, {"n_layers", h.Layers}, {"n_heads", h.Heads},
			{"n_kv_heads", h.KVHeads}, {"vocab_size", h.Vocab}, {"seq_len", h.SeqLen}, {"shared_classifier", h.Shared}} {
			r.Metadata = append(r.Metadata, inspectMeta{Key: "header." + kv.k, Type: fmt.Sprintf("%T", kv.v), Value: fmt.Sprint(kv.v)})
		}
	}
	var vocab *tokenizer.Vocab
	tmpl := ""
	if b, err := loader.Open(path, loader.Options{}); err == nil {
		c := b.Model.Config
		r.Config = &c
		if b.Tok != nil {
			vocab = b.Tok.Vocab()
		}
		tmpl = b.ChatTemplate
		b.Close()
	} else {
		r.LoadError = err.Error()
		if f != loader.Llama2C {
			vocab, tmpl, _ = loader.OpenVocab(path)
		}
	}
	if v := vocab; v != nil {
		name := func(id int) string {
			if id >= 0 && id < len(v.Tokens) {
				return fmt.Sprintf("%d %q", id, v.Tokens[id])
			}
			return ""
		}
		r.Tokenizer = &inspectTok{Model: v.Model, Pre: v.Pre, Tokens: len(v.Tokens), Merges: len(v.Merges),
			BOS: name(v.BOS), EOS: name(v.EOS), AddBOS: v.AddBOS, Template: tmpl != ""}
	}
	return r, nil
}

func metaType(v gguf.Value) string {
	if v.Type == gguf.TypeArray {
		return "[" + v.ElemType.String() + "]"
	}
	return v.Type.String()
}

// summarize prints a metadata value, arrays longer than 8 as their length and first elements.
func summarize(v gguf.Value) string {
	if v.Type != gguf.TypeArray {
		if s, ok := v.V.(string); ok {
			return clip(fmt.Sprintf("%q", s))
		}
		return fmt.Sprint(v.V)
	}
	var elems []string
	n := 0
	switch a := v.V.(type) {
	case []string:
		n = len(a)
		for _, s := range a[:min(len(a), 8)] {
			elems = append(elems, fmt.Sprintf("%q", s))
		}
	default:
		s := strings.Trim(fmt.Sprint(a), "[]")
		all := strings.Fields(s)
		n = len(all)
		elems = all[:min(len(all), 8)]
	}
	if n > 8 {
		return fmt.Sprintf("%d elements: %s, ...", n, strings.Join(elems, ", "))
	}
	return "[" + strings.Join(elems, ", ") + "]"
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

func printInspect(w io.Writer, r *inspectReport) {
	fmt.Fprintf(w, "%s: %s", r.Path, r.Format)
	if r.Arch != "" {
		fmt.Fprintf(w, ", architecture %s", r.Arch)
	}
	fmt.Fprintln(w)
	if c := r.Config; c != nil {
		fmt.Fprintf(w, "config: dim %d, layers %d, heads %d, kv heads %d, head dim %d, ffn %d, vocab %d, ctx %d, rope theta %g (neox %v), eps %g, tied %v, qkv bias %v, qk norm %v",
			c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab, c.CtxLen, c.RopeTheta, c.RopeNeoX, c.NormEps, c.Tied, c.QKVBias, c.QKNorm)
		if s := c.RopeScaling; s != nil {
			fmt.Fprintf(w, ", llama3 rope scaling %+v", *s)
		}
		if c.Experts > 0 {
			fmt.Fprintf(w, ", %d experts (%d per token, renormalised %v)", c.Experts, c.ExpertsUsed, c.ExpertsNorm)
		}
		if c.SlidingWindow > 0 {
			fmt.Fprintf(w, ", sliding window %d", c.SlidingWindow)
		}
		if c.SlidingPattern > 0 {
			fmt.Fprintf(w, ", a global layer every %d", c.SlidingPattern)
			if c.RopeLocalTheta > 0 {
				fmt.Fprintf(w, " (local layers' rope theta %g)", c.RopeLocalTheta)
			}
		}
		if y := c.Yarn; y != nil {
			fmt.Fprintf(w, ", yarn rope scaling %g over %d", y.Factor, y.OrigCtx)
		}
		if c.RopeLinear > 0 {
			fmt.Fprintf(w, ", linear rope scaling %g on the global layers", c.RopeLinear)
		}
		if c.AttnSoftcap > 0 || c.FinalSoftcap > 0 || c.AttnScalar > 0 {
			fmt.Fprintf(w, ", attn soft-cap %g, final soft-cap %g, query_pre_attn_scalar %g",
				c.AttnSoftcap, c.FinalSoftcap, c.AttnScalar)
		}
		if s := c.LongRope; s != nil {
			which := "short"
			if s.UseLong(c.CtxLen) {
				which = "long"
			}
			fmt.Fprintf(w, ", longrope (original ctx %d, attn factor %.6g, %s factors)", s.OrigCtx, s.AttnFactor, which)
		}
		fmt.Fprintln(w)
	}
	if r.LoadError != "" {
		fmt.Fprintf(w, "cannot load as a model: %s\n", r.LoadError)
	}
	if r.Quant != "" {
		fmt.Fprintf(w, "quantization: %s\n", r.Quant)
	}
	fmt.Fprintf(w, "tensors: %d, %d parameters (%.2f M), %d bytes (%.2f MiB)\n", len(r.Tensors), r.TotalParams,
		float64(r.TotalParams)/1e6, r.TotalBytes, float64(r.TotalBytes)/(1<<20))
	for _, t := range r.Tensors {
		fmt.Fprintf(w, "  %-48s %-6s %-16s %d\n", t.Name, t.Type, fmt.Sprint(t.Shape), t.Bytes)
	}
	if len(r.Metadata) > 0 {
		fmt.Fprintf(w, "metadata: %d keys\n", len(r.Metadata))
		for _, m := range r.Metadata {
			fmt.Fprintf(w, "  %-48s %-10s %s\n", m.Key, m.Type, m.Value)
		}
	}
	if t := r.Tokenizer; t != nil {
		fmt.Fprintf(w, "tokenizer: %s", t.Model)
		if t.Pre != "" {
			fmt.Fprintf(w, " (pre %s)", t.Pre)
		}
		fmt.Fprintf(w, ", %d tokens, %d merges, bos %s, eos %s, add bos %v, chat template %v\n",
			t.Tokens, t.Merges, t.BOS, t.EOS, t.AddBOS, t.Template)
	} else {
		fmt.Fprintln(w, "tokenizer: none found")
	}
}
