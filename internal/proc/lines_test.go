package proc

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Two streams writing concurrently in odd-sized pieces: every line arrives whole, with its
// stream's prefix, in the stream's order; Last and Flush see the trailing partial line.
func TestPrefixedLinesDoNotInterleave(t *testing.T) {
	var out strings.Builder
	l := NewLines(&out)
	a, b := l.Prefixed("[a] "), l.Prefixed("[b] ")
	var wg sync.WaitGroup
	for _, w := range []*PrefixWriter{a, b} {
		wg.Go(func() {
			var s strings.Builder
			for i := range 200 {
				fmt.Fprintf(&s, "line %d of a long enough text\n", i)
			}
			txt := s.String() + "tail"
			for i := 0; i < len(txt); i += 7 {
				w.Write([]byte(txt[i:min(i+7, len(txt))]))
			}
		})
	}
	wg.Wait()
	if a.Last() != "line 199 of a long enough text" {
		t.Fatalf("Last before Flush = %q", a.Last())
	}
	a.Flush()
	b.Flush()
	if a.Last() != "tail" {
		t.Fatalf("Last after Flush = %q", a.Last())
	}
	next := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		p, rest := line[:4], line[4:]
		if p != "[a] " && p != "[b] " {
			t.Fatalf("line without a prefix: %q", line)
		}
		want := fmt.Sprintf("line %d of a long enough text", next[p])
		if next[p] == 200 {
			want = "tail"
		}
		if rest != want {
			t.Fatalf("got %q, want %q", line, p+want)
		}
		next[p]++
	}
	if next["[a] "] != 201 || next["[b] "] != 201 {
		t.Fatalf("lines per stream: %v", next)
	}
}

func TestOverlongLineIsCut(t *testing.T) {
	var out strings.Builder
	w := NewLines(&out).Prefixed("> ")
	w.Write([]byte(strings.Repeat("x", MaxLineBytes+10)))
	if got := strings.Count(out.String(), "\n"); got != 1 {
		t.Fatalf("%d lines written before the newline, want 1 (the cut)", got)
	}
}
