// Package safetensors reads and writes Hugging Face safetensors files: an 8-byte little-endian
// header length N, N bytes of JSON describing each tensor (dtype, shape, data_offsets) plus an
// optional "__metadata__" string map, then the raw tensor bytes. See docs/formats/safetensors.md.
//
// This file implements the File type and Open (read-only memory map of one file).
package safetensors

import (
	"fmt"
	"github.com/llmcloud/llmcloud/internal/mmap"
	"os"

	"github.com/llmcloud/llmcloud/tensor"
)

// File is one parsed safetensors file. Tensors are sorted by their offset in the data buffer;
// their Data aliases the buffer passed to Parse (or the memory map made by Open), so it is
// read-only and valid until Close.
type File struct {
	Path     string
	Metadata map[string]string
	Tensors  []tensor.Tensor

	index map[string]int // tensor name -> position in Tensors
	unmap func() error   // releases the mapping made by Open; nil after Close or for Parse
}

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (*tensor.Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Close releases the memory map made by Open. Tensor data must not be used afterwards.
// Closing twice, or closing a File made by Parse, is harmless.
func (f *File) Close() error {
	if f == nil || f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	for i := range f.Tensors {
		f.Tensors[i].Data = nil
	}
	return u()
}

// Open maps the file at path read-only and parses it. The tensors' Data alias the mapping.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("safetensors: %s: is a directory (use OpenDir)", path)
	}
	data, unmap, err := mmap.Map(fh, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	f, err := Parse(data, path)
	if err != nil {
		unmap()
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}
