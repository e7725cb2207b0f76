//go:build unix

// This file maps a file read-only with mmap(2) on Unix systems.
package gguf

import (
	"os"
	"syscall"
)

func mapFile(fh *os.File, size int) ([]byte, func() error, error) {
	data, err := syscall.Mmap(int(fh.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
