package generate

import (
	"strings"
	"testing"
)

func TestStopMatcher(t *testing.T) {
	cases := []struct {
		stops  []string
		pieces []string
		want   string
		stop   bool
	}{
		{[]string{"\n\n"}, []string{"Hello", " world", "\n", "\n", "more"}, "Hello world", true},
		{[]string{"END"}, []string{"abc E", "N", "x"}, "abc ENx", false},
		{[]string{"END"}, []string{"abc E", "N", "D tail"}, "abc ", true},
		{[]string{"ab", "b"}, []string{"xa", "b"}, "x", true},  // "ab" starts earlier than "b"
		{[]string{"cd", "bcde"}, []string{"abcd"}, "ab", true}, // earliest start wins
		{nil, []string{"a", "b"}, "ab", false},
		{[]string{""}, []string{"a"}, "a", false},
	}
	for i, c := range cases {
		m := NewStopMatcher(c.stops)
		var b strings.Builder
		stopped := false
		for _, p := range c.pieces {
			out, s := m.Push(p)
			b.WriteString(out)
			if s {
				stopped = true
				break
			}
		}
		if !stopped {
			b.WriteString(m.Flush())
		}
		if b.String() != c.want || stopped != c.stop {
			t.Errorf("case %d: got %q stopped=%v, want %q stopped=%v", i, b.String(), stopped, c.want, c.stop)
		}
	}
}

// A held-back prefix is never emitted before it is known not to be a stop string.
func TestStopMatcherHoldsBack(t *testing.T) {
	m := NewStopMatcher([]string{"</s>"})
	out, _ := m.Push("hi </")
	if out != "hi " {
		t.Fatalf("emitted %q, want %q", out, "hi ")
	}
	out, _ = m.Push("b>")
	if out != "</b>" {
		t.Fatalf("emitted %q, want %q", out, "</b>")
	}
}

func FuzzStopMatcher(f *testing.F) {
	f.Add("hello world\n\nbye", "\n\n", 3)
	f.Fuzz(func(t *testing.T, text, stop string, step int) {
		if step <= 0 || step > 16 {
			step = 1
		}
		m := NewStopMatcher([]string{stop})
		var b strings.Builder
		stopped := false
		for i := 0; i < len(text) && !stopped; i += step {
			out, s := m.Push(text[i:min(i+step, len(text))])
			b.WriteString(out)
			stopped = s
		}
		if !stopped {
			b.WriteString(m.Flush())
		}
		want := text
		if stop != "" {
			if i := strings.Index(text, stop); i >= 0 {
				want = text[:i]
			}
		}
		if b.String() != want {
			t.Fatalf("text %q stop %q step %d: got %q want %q", text, stop, step, b.String(), want)
		}
	})
}
