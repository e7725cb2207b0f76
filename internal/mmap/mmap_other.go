//go:build !unix

package mmap

import (
	"io"
	"os"
)

// mapFile reads the file into memory on systems without mmap.
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
