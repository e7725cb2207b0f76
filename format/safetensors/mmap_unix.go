//go:build unix

// This file implements mapFile with a read-only, shared mmap(2) on Unix systems.
package safetensors

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// mapFile maps size bytes of fh read-only. An empty file maps to a nil slice.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if size < 0 || uint64(size) > math.MaxInt {
		return nil, nil, fmt.Errorf("file size %d cannot be mapped", size)
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
