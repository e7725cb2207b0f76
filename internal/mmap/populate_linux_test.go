package mmap

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPopulate maps a file (small pages, and one large enough for mapFile's 2 MiB alignment)
// and populates a range in the middle that does not start or end on a page: the range's pages
// become resident in the mapping without being touched, the rest of the file does not.
func TestPopulate(t *testing.T) {
	page := os.Getpagesize()
	for _, size := range []int{256 * page, hugeMin + 3*hugeSize} {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		data, unmap, err := Map(f, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := ResidentBytes(data); n != 0 {
			t.Fatalf("size %d: %d bytes resident before Populate", size, n)
		}
		lo, hi := size/4+10, size/2-10
		Populate(data[lo:hi])
		Populate(nil)
		Populate(data[:0])
		n, err := ResidentBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		// At least the range's whole pages; at most the range rounded out to 2 MiB folios.
		if want := int64(hi - lo - 2*page); n < want || n > int64(hi-lo+2*hugeSize) {
			t.Errorf("size %d: %d bytes resident after populating %d", size, n, hi-lo)
		}
		unmap()
		f.Close()
	}
}
