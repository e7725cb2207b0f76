//go:build !unix

// This file implements mapFile on systems without mmap support here: it reads the whole file.
package safetensors

import (
	"fmt"
	"io"
	"math"
	"os"
)

// mapFile reads size bytes of fh into memory.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if size < 0 || uint64(size) > math.MaxInt {
		return nil, nil, fmt.Errorf("file size %d cannot be read", size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
