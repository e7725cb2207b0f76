//go:build unix

// This file implements read-only memory mapping of checkpoint files on Unix systems.
package llama2c

import (
	"os"
	"syscall"
)

// mapFile maps f read-only; it returns the bytes and a function that releases them.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
