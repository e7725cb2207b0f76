package mmap

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAnonHugeExactResident writes every byte of AnonHugeExact memory whose size is not a
// multiple of 2 MiB: its resident size must be the size rounded up to a page (the partial
// last 2 MiB on small pages), where AnonHuge's may round up to 2 MiB.
func TestAnonHugeExactResident(t *testing.T) {
	page := os.Getpagesize()
	const size = 2*hugeSize + 300<<10 + 5
	b, release, err := AnonHugeExact(size)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if n, _ := ResidentBytes(b); n != 0 {
		t.Errorf("untouched memory: %d bytes resident, want 0", n)
	}
	for i := range b {
		b[i] = byte(i)
	}
	want := int64((size + page - 1) / page * page)
	if n, err := ResidentBytes(b); err != nil || n != want {
		t.Errorf("written memory: %d bytes resident (%v), want %d", n, err, want)
	}
}

// TestResidentBytesFile reads a few pages of a mapped file: they are resident in the
// mapping, and none is after Release.
func TestResidentBytesFile(t *testing.T) {
	page := os.Getpagesize()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 64*page), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, unmap, err := Map(f, int64(64*page))
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	var sum byte
	for i := 0; i < 8*page; i += page {
		sum += data[i]
	}
	n, err := ResidentBytes(data)
	if err != nil || n < int64(8*page) || n > int64(64*page) {
		t.Errorf("after reading 8 pages: %d bytes resident (%v), want 8 to 64 pages", n, err)
	}
	Release(data)
	if n, err := ResidentBytes(data); err != nil || n != 0 {
		t.Errorf("after Release: %d bytes resident (%v), want 0 (sum %d)", n, err, sum)
	}
}
