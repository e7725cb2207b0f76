package mmap

import (
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestAnonHuge checks that AnonHuge memory starts on a 2 MiB boundary, is zeroed and writable
// across huge-page boundaries, that HugeBytes finds the mapping and never reports more than it
// holds, and that with transparent huge pages enabled the kernel backed at least part of it.
func TestAnonHuge(t *testing.T) {
	const size = 4*hugeSize + 4096 + 5
	b, release, err := AnonHuge(size)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size {
		t.Fatalf("got %d bytes, want %d", len(b), size)
	}
	if addr := uintptr(unsafe.Pointer(&b[0])); addr%hugeSize != 0 {
		t.Errorf("memory at %#x is not 2 MiB aligned", addr)
	}
	for i := 0; i < size; i += 4096 {
		if b[i] != 0 {
			t.Fatalf("byte %d = %d, want 0", i, b[i])
		}
		b[i] = byte(i/4096 + 1)
	}
	b[size-1] = 7
	for i := 0; i < size; i += 4096 {
		if b[i] != byte(i/4096+1) {
			t.Fatalf("byte %d = %d after writing %d", i, b[i], byte(i/4096+1))
		}
	}
	huge, err := HugeBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if huge < 0 || huge > 5*hugeSize || huge%hugeSize != 0 {
		t.Errorf("HugeBytes = %d: not a multiple of 2 MiB within the mapping", huge)
	}
	mode, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	t.Logf("THP mode %q: %d of %d bytes on huge pages", strings.TrimSpace(string(mode)), huge, size)
	if (strings.Contains(string(mode), "[always]") || strings.Contains(string(mode), "[madvise]")) && huge == 0 {
		t.Error("transparent huge pages are enabled but none backs the memory")
	}
	if err := release(); err != nil {
		t.Error(err)
	}
	if _, _, err := AnonHuge(0); err == nil {
		t.Error("AnonHuge(0) succeeded")
	}
}
