package proc

import (
	"strings"
	"sync"
	"testing"
)

// TestBuffer writes whole lines from 8 goroutines while another reads, and checks that every
// line arrives intact (run with -race to check the locking).
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte(strings.Repeat(string(rune('a'+g)), 10) + "\n"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if len(l) != 10 || strings.Count(l, l[:1]) != 10 {
			t.Fatalf("torn line %q", l)
		}
	}
}
