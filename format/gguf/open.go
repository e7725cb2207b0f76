// This file implements Open and Close: the file is mapped read-only (see mmap_*.go) and parsed
// in place, so tensor Data slices point straight into the page cache.
package gguf

import (
	"fmt"
	"github.com/llmcloud/llmcloud/internal/mmap"
	"os"
)

// Open maps path read-only and parses it. Tensor Data aliases the mapping: it stays valid
// until Close.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	size := fi.Size()
	if size == 0 {
		return nil, fmt.Errorf("%s: empty file, not GGUF", path)
	}
	data, unmap, err := mmap.Map(fh, size)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data, path)
	if err != nil {
		unmap()
		return nil, err
	}
	f.closer = unmap
	return f, nil
}

// Mapped reports whether f's image is a mapping of the file (Open), whose pages a reader may
// release (mmap.Release), rather than bytes in memory (Parse).
func (f *File) Mapped() bool { return f.closer != nil }

// Close releases the mapping. Tensor Data must not be used afterwards.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c()
}
