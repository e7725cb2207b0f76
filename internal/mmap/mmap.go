// Package mmap maps model files read-only into memory, so that weights are used where they lie
// in the page cache instead of being copied (on systems without mmap the file is read).
package mmap

import (
	"fmt"
	"math"
	"os"
)

// Map maps the first size bytes of f read-only. The bytes must not be written to, and must
// not be used after release is called. An empty file maps to a nil slice.
func Map(f *os.File, size int64) (data []byte, release func() error, err error) {
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if size < 0 || uint64(size) > math.MaxInt {
		return nil, nil, fmt.Errorf("mmap %s: size %d cannot be mapped", f.Name(), size)
	}
	data, release, err = mapFile(f, int(size))
	if err != nil {
		return nil, nil, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	return data, release, nil
}
