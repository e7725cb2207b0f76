// This file implements WriteLlama2C: a Plan as a llama2.c v0 checkpoint (float32) plus, for a
// SentencePiece vocabulary, a tokenizer.bin beside it. llama2.c's run.c hard-codes its
// numerics (RoPE base 10000 on adjacent pairs, RMSNorm eps 1e-5, head dim = dim/heads, no
// biases), so models that need anything else are refused with the reason.
package convert

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/llmcloud/llmcloud/format/llama2c"
	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// WriteLlama2C writes p to path, and its vocabulary to tokenizer.bin in the same directory
// (a gpt2 vocabulary is skipped with a warning: llama2.c's tokenizer.bin holds SentencePiece
// pieces only).
func WriteLlama2C(path string, p *Plan, opts Options) error {
	c := p.Config
	if dt, keep, err := opts.weightType(); err != nil {
		return err
	} else if !keep && dt != tensor.F32 {
		return fmt.Errorf("convert: %s: llama2.c checkpoints hold float32 only, not %s", path, dt)
	}
	var why string
	switch {
	case c.Family() == nil || !c.Family().Llama2C:
		why = fmt.Sprintf("architecture %s", c.Arch)
	case c.HeadDim*c.Heads != c.Dim:
		why = fmt.Sprintf("head dim %d != dim %d / heads %d", c.HeadDim, c.Dim, c.Heads)
	case c.QKVBias || c.QKNorm:
		why = "q/k/v biases or q/k norms"
	case c.Experts > 0:
		why = fmt.Sprintf("a mixture of experts (expert_count = %d)", c.Experts)
	case c.RopeScaling != nil || hasTensor(p.Tensors, model.RopeFreqsName):
		why = "rope scaling"
	case c.RopeTheta != 10000:
		why = fmt.Sprintf("rope theta %g (llama2.c uses 10000)", c.RopeTheta)
	case c.NormEps != 1e-5:
		why = fmt.Sprintf("RMSNorm eps %g (llama2.c uses 1e-5)", c.NormEps)
	case c.CtxLen <= 0:
		why = "no context length"
	}
	if why != "" {
		return fmt.Errorf("convert: %s: a llama2.c checkpoint cannot express this model: %s", path, why)
	}
	h := llama2c.Header{Dim: c.Dim, HiddenDim: c.FFN, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads,
		Vocab: c.Vocab, SeqLen: c.CtxLen, Shared: c.Tied}
	ts := map[string]*tensor.Tensor{}
	for i := range p.Tensors {
		t, err := p.Tensors[i].Load()
		if err != nil {
			return err
		}
		ts[p.Tensors[i].Name] = t
	}
	if o, e := ts["output.weight"], ts["token_embd.weight"]; o != nil && e != nil && o.Type == e.Type && bytes.Equal(o.Data, e.Data) {
		h.Shared = true // an untied copy of the embedding (as llama.cpp's llama2.c converter writes)
	}
	if h.Shared {
		delete(ts, "output.weight")
	}
	err := atomicfile.Write(path, func(w io.Writer) error { return llama2c.Write(w, h, ts) })
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	switch {
	case p.Vocab == nil:
	case p.Vocab.Model != "llama":
		opts.warnf("%s: a %q vocabulary cannot be written as llama2.c tokenizer.bin; pass the original tokenizer with --tokenizer when running", path, p.Vocab.Model)
	default:
		tp := filepath.Join(filepath.Dir(path), "tokenizer.bin")
		if err := atomicfile.Write(tp, func(w io.Writer) error { return writeLlama2CTokenizer(w, p.Vocab) }); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
	}
	return nil
}

// writeLlama2CTokenizer writes llama2.c's tokenizer.bin: int32 max_token_length, then per
// token float32 score, int32 byte length and the bytes, with "▁" spelled as a space as
// llama2.c's exporter does.
func writeLlama2CTokenizer(w io.Writer, v *tokenizer.Vocab) error {
	pieces := make([]string, len(v.Tokens))
	longest := 0
	for i, t := range v.Tokens {
		pieces[i] = strings.ReplaceAll(t, "\u2581", " ")
		longest = max(longest, len(pieces[i]))
	}
	var b [4]byte
	put := func(u uint32) { binary.LittleEndian.PutUint32(b[:], u); w.Write(b[:]) }
	put(uint32(longest))
	for i, s := range pieces {
		var score float32
		if v.Scores != nil {
			score = v.Scores[i]
		}
		put(math.Float32bits(score))
		put(uint32(len(s)))
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
	}
	return nil
}
