//go:build !unix

// This file implements the fallback for systems without mmap: the file is read into memory.
package llama2c

import (
	"io"
	"os"
)

// mapFile reads f into memory; the release function is a no-op.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
