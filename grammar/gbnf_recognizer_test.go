// A tiny test-only recognizer for the IR (memoized backtracking over byte positions), so the
// GBNF and Lark tests can check the language a grammar describes without the real engine.
// Left recursion is cut (a rule re-entered at the same position matches nothing there), so
// test grammars avoid it.

package grammar

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

type recognizer struct {
	g    *IR
	s    string
	memo map[recKey][]int
	busy map[recKey]bool
	res  map[string]*regexp.Regexp
}

type recKey struct {
	rule string
	at   int
}

// recognize reports whether s is in the language of g.
func recognize(t *testing.T, g *IR, s string) bool {
	t.Helper()
	r := &recognizer{g: g, s: s, memo: map[recKey][]int{}, busy: map[recKey]bool{}, res: map[string]*regexp.Regexp{}}
	for _, end := range r.rule(g.Start, 0) {
		if end == len(s) {
			return true
		}
	}
	return false
}

func (r *recognizer) rule(name string, at int) []int {
	k := recKey{name, at}
	if ends, ok := r.memo[k]; ok {
		return ends
	}
	if r.busy[k] {
		return nil
	}
	r.busy[k] = true
	ends := r.match(r.g.Rules[name], at)
	delete(r.busy, k)
	r.memo[k] = ends
	return ends
}

// match returns the sorted distinct positions where e, started at at, can end.
func (r *recognizer) match(e *Expr, at int) []int {
	set := map[int]bool{}
	switch e.Kind {
	case KindLiteral:
		if len(r.s)-at >= len(e.Text) && r.s[at:at+len(e.Text)] == e.Text {
			set[at+len(e.Text)] = true
		}
	case KindRegex:
		re, ok := r.res[e.Text]
		if !ok {
			re = regexp.MustCompile(`^(?:` + e.Text + `)$`)
			r.res[e.Text] = re
		}
		for j := at; j <= len(r.s); j++ {
			if re.MatchString(r.s[at:j]) {
				set[j] = true
			}
		}
	case KindRef:
		return r.rule(e.Text, at)
	case KindAlt:
		for _, s := range e.Subs {
			for _, j := range r.match(s, at) {
				set[j] = true
			}
		}
	case KindSeq:
		cur := []int{at}
		for _, s := range e.Subs {
			next := map[int]bool{}
			for _, p := range cur {
				for _, j := range r.match(s, p) {
					next[j] = true
				}
			}
			cur = keys(next)
		}
		return cur
	case KindRepeat:
		frontier := []int{at}
		for k := 0; len(frontier) > 0; k++ {
			if k >= e.Min {
				var fresh []int
				for _, p := range frontier {
					if !set[p] {
						set[p] = true
						fresh = append(fresh, p)
					}
				}
				frontier = fresh
			}
			if e.Max >= 0 && k == e.Max {
				break
			}
			next := map[int]bool{}
			for _, p := range frontier {
				for _, j := range r.match(e.Subs[0], p) {
					next[j] = true
				}
			}
			frontier = keys(next)
		}
	}
	return keys(set)
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// checkLanguage asserts that g accepts every string of yes and none of no, by the test
// recognizer and, once Compile is written, by the engine (Matcher.AcceptBytes and CanEnd).
func checkLanguage(t *testing.T, g *IR, yes, no []string) {
	t.Helper()
	if cg, err := Compile(g, Limits{}); err == nil {
		v := NewVocab([][]byte{[]byte("a")}, nil)
		for _, c := range []struct {
			strs []string
			want bool
		}{{yes, true}, {no, false}} {
			for _, s := range c.strs {
				m := cg.NewMatcher(v)
				if got := m.AcceptBytes([]byte(s)) == nil && m.CanEnd(); got != c.want {
					t.Errorf("engine: %q accepted %v, want %v", s, got, c.want)
				}
			}
		}
	} else if !strings.Contains(err.Error(), "not implemented") {
		t.Errorf("Compile: %v\n%s", err, g)
	}
	for _, s := range yes {
		if !recognize(t, g, s) {
			t.Errorf("rejects %q, want it accepted", s)
		}
	}
	for _, s := range no {
		if recognize(t, g, s) {
			t.Errorf("accepts %q, want it rejected", s)
		}
	}
}

func TestRecognizer(t *testing.T) {
	g := &IR{Start: "root", Rules: map[string]*Expr{
		"root": Seq(Lit("a"), Rep(Alt(Lit("b"), Re("[0-9]+")), 1, 3), Opt(Ref("root"))),
	}}
	checkLanguage(t, g, []string{"ab", "a1b22", "ab1b", "abab", "a123"}, []string{"", "a", "abbbb", "ba", "abc"})
}
