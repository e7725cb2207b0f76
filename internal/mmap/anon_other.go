//go:build !linux

// This file implements AnonHuge and HugeBytes where Linux transparent huge pages are not
// available: ordinary Go memory, of which no byte is known to be huge-page backed.

package mmap

import "fmt"

// AnonHuge returns size bytes of zeroed memory (huge pages are only requested on Linux).
func AnonHuge(size int) ([]byte, func() error, error) {
	if size <= 0 {
		return nil, nil, fmt.Errorf("mmap: anonymous size %d", size)
	}
	return make([]byte, size), func() error { return nil }, nil
}

// HugeBytes reports 0: huge-page backing is not known on this system.
func HugeBytes(b []byte) (int64, error) { return 0, nil }

// AnonHugeExact is AnonHuge.
func AnonHugeExact(size int) ([]byte, func() error, error) { return AnonHuge(size) }

// ResidentBytes reports 0: resident sizes are read from Linux's /proc/self/smaps only.
func ResidentBytes(b []byte) (int64, error) { return 0, nil }
