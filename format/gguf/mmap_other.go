//go:build !unix

// This file is the fallback for systems without mmap: the file is read into memory.
package gguf

import (
	"io"
	"os"
)

func mapFile(fh *os.File, size int) ([]byte, func() error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
