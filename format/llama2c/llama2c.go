// Package llama2c reads and writes llama2.c checkpoints (the legacy "v0" .bin format of
// karpathy/llama2.c): a 7 x int32 header followed by float32 weights. Tensors are exposed under
// llmcloud's canonical GGUF names (token_embd.weight, blk.N.attn_q.weight, ...), row-major
// [out, in], with Data aliasing the memory-mapped file.
//
// Layout after the header, all little-endian float32, in this order:
//
//	token_embedding [vocab, dim]
//	rms_att         [layers, dim]
//	wq              [layers, heads*headSize, dim]
//	wk, wv          [layers, kvHeads*headSize, dim] each
//	wo              [layers, dim, heads*headSize]
//	rms_ffn         [layers, dim]
//	w1 (gate)       [layers, hidden, dim]
//	w2 (down)       [layers, dim, hidden]
//	w3 (up)         [layers, hidden, dim]
//	rms_final       [dim]
//	freq_cis_real   [seqLen, headSize/2]
//	freq_cis_imag   [seqLen, headSize/2]
//	wcls            [vocab, dim]   only when the header's vocab_size is negative (untied)
//
// llama2.c applies RoPE to adjacent pairs (2i, 2i+1), the same as GGUF llama's "normal" mode,
// so wq and wk are used as stored (no row permutation).
package llama2c

import (
	"encoding/binary"
	"fmt"
	"github.com/llmcloud/llmcloud/internal/mmap"
	"os"

	"github.com/llmcloud/llmcloud/tensor"
)

// HeaderSize is the size in bytes of the v0 header.
const HeaderSize = 7 * 4

// Header is the checkpoint's hyper-parameters. Vocab is always positive here; Shared records
// the sign of the stored vocab_size (positive = classifier tied to the token embedding).
type Header struct {
	Dim, HiddenDim, Layers, Heads, KVHeads, Vocab, SeqLen int
	Shared                                                bool
}

// HeadSize is Dim / Heads.
func (h Header) HeadSize() int { return h.Dim / h.Heads }

// Validate checks that the header describes a well-formed network.
func (h Header) Validate() error {
	switch {
	case h.Dim <= 0 || h.HiddenDim <= 0 || h.Layers <= 0 || h.Heads <= 0 || h.KVHeads <= 0 || h.Vocab <= 0 || h.SeqLen <= 0:
		return fmt.Errorf("header has a non-positive field: %+v", h)
	case h.Dim%h.Heads != 0:
		return fmt.Errorf("dim %d is not a multiple of n_heads %d", h.Dim, h.Heads)
	case h.Heads%h.KVHeads != 0:
		return fmt.Errorf("n_heads %d is not a multiple of n_kv_heads %d", h.Heads, h.KVHeads)
	case h.HeadSize()%2 != 0:
		return fmt.Errorf("head size %d is odd", h.HeadSize())
	}
	// Guard against absurd headers whose products would overflow.
	const lim = 1 << 40
	if int64(h.Vocab)*int64(h.Dim) > lim || int64(h.Layers)*int64(h.Dim)*int64(h.HiddenDim) > lim ||
		int64(h.SeqLen)*int64(h.HeadSize()) > lim {
		return fmt.Errorf("header sizes too large: %+v", h)
	}
	return nil
}

// section is one contiguous float32 array of the file.
type section struct {
	name  string
	shape []int // per-layer shape for layered sections
	layer bool  // repeated once per layer
}

// sections lists the file's arrays in storage order.
func (h Header) sections() []section {
	hs := h.HeadSize()
	kv := h.KVHeads * hs
	s := []section{
		{"token_embd.weight", []int{h.Vocab, h.Dim}, false},
		{"attn_norm.weight", []int{h.Dim}, true},
		{"attn_q.weight", []int{h.Heads * hs, h.Dim}, true},
		{"attn_k.weight", []int{kv, h.Dim}, true},
		{"attn_v.weight", []int{kv, h.Dim}, true},
		{"attn_output.weight", []int{h.Dim, h.Heads * hs}, true},
		{"ffn_norm.weight", []int{h.Dim}, true},
		{"ffn_gate.weight", []int{h.HiddenDim, h.Dim}, true},
		{"ffn_down.weight", []int{h.Dim, h.HiddenDim}, true},
		{"ffn_up.weight", []int{h.HiddenDim, h.Dim}, true},
		{"output_norm.weight", []int{h.Dim}, false},
		{FreqCisReal, []int{h.SeqLen, hs / 2}, false},
		{FreqCisImag, []int{h.SeqLen, hs / 2}, false},
	}
	if !h.Shared {
		s = append(s, section{"output.weight", []int{h.Vocab, h.Dim}, false})
	}
	return s
}

// Names of the two precomputed RoPE tables (not used by llmcloud's forward pass, which
// computes RoPE itself; exposed for completeness).
const (
	FreqCisReal = "rope.freq_cis_real"
	FreqCisImag = "rope.freq_cis_imag"
)

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// FileSize is the exact byte size of a checkpoint with header h.
func (h Header) FileSize() int64 {
	n := int64(HeaderSize)
	for _, s := range h.sections() {
		c := int64(prod(s.shape)) * 4
		if s.layer {
			c *= int64(h.Layers)
		}
		n += c
	}
	return n
}

// ParseHeader decodes the 28-byte header.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("file is %d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	var v [7]int
	for i := range v {
		v[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	h := Header{Dim: v[0], HiddenDim: v[1], Layers: v[2], Heads: v[3], KVHeads: v[4], Vocab: v[5], SeqLen: v[6], Shared: v[5] > 0}
	if h.Vocab < 0 {
		h.Vocab = -h.Vocab
	}
	if err := h.Validate(); err != nil {
		return Header{}, err
	}
	return h, nil
}

// File is a parsed checkpoint.
type File struct {
	Path    string
	Header  Header
	Tensors []tensor.Tensor // in storage order, per-layer tensors as blk.N.<name>
	byName  map[string]int
	release func() error
}

// Tensor returns the tensor with the given canonical name.
func (f *File) Tensor(name string) (*tensor.Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Close releases the mapping; tensors must not be used afterwards.
func (f *File) Close() error {
	if f.release == nil {
		return nil
	}
	err := f.release()
	f.release = nil
	return err
}

// Open memory-maps and parses the checkpoint at path.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", path, err)
	}
	data, release, err := mmap.Map(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: map: %w", path, err)
	}
	f, err := Parse(path, data)
	if err != nil {
		release()
		return nil, err
	}
	f.release = release
	return f, nil
}

// Parse interprets data (a whole checkpoint) without copying; name is used in errors.
func Parse(name string, data []byte) (*File, error) {
	h, err := ParseHeader(data)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", name, err)
	}
	if want := h.FileSize(); int64(len(data)) != want {
		what := "truncated"
		if int64(len(data)) > want {
			what = "has trailing bytes"
		}
		return nil, fmt.Errorf("llama2c: %s: file %s: header %+v needs %d bytes, file has %d", name, what, h, want, len(data))
	}
	f := &File{Path: name, Header: h, byName: map[string]int{}}
	off := HeaderSize
	add := func(n string, shape []int) {
		sz := prod(shape) * 4
		f.byName[n] = len(f.Tensors)
		f.Tensors = append(f.Tensors, tensor.Tensor{Name: n, Type: tensor.F32, Shape: shape, Data: data[off : off+sz : off+sz]})
		off += sz
	}
	for _, s := range h.sections() {
		if !s.layer {
			add(s.name, s.shape)
			continue
		}
		for l := 0; l < h.Layers; l++ {
			add(fmt.Sprintf("blk.%d.%s", l, s.name), s.shape)
		}
	}
	return f, nil
}
