package mmap

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// TestMapHuge maps a file large enough for the huge-page path: the mapping must start on a
// 2 MiB boundary, hold the file's bytes (at the start, across 2 MiB boundaries and at the
// end), and LLMCLOUD_HUGEPAGES=0 must give a plain mapping of the same bytes.
func TestMapHuge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	size := int64(hugeMin + 3*hugeSize + 123)
	fw, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	marks := []int64{0, hugeSize - 1, hugeSize, 5*hugeSize + 7, size - 1}
	for _, off := range marks {
		if _, err := fw.WriteAt([]byte{byte(off*7 + 1)}, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"", "0"} {
		t.Run("LLMCLOUD_HUGEPAGES="+env, func(t *testing.T) {
			t.Setenv("LLMCLOUD_HUGEPAGES", env)
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			data, release, err := Map(f, size)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) != int(size) {
				t.Fatalf("mapped %d bytes, want %d", len(data), size)
			}
			if addr := uintptr(unsafe.Pointer(&data[0])); env == "" && addr%hugeSize != 0 {
				t.Errorf("mapping at %#x is not 2 MiB aligned", addr)
			}
			for _, off := range marks {
				if got, want := data[off], byte(off*7+1); got != want {
					t.Errorf("byte %d = %d, want %d", off, got, want)
				}
			}
			if data[hugeSize+1] != 0 {
				t.Error("a hole reads non-zero")
			}
			if err := release(); err != nil {
				t.Error(err)
			}
		})
	}
}
