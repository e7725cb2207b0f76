// This file checks the regex -> byte NFA -> lazy DFA path against Go's regexp on valid UTF-8
// (and that invalid UTF-8 never matches), and the errors for unsupported constructs.

package grammar

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// lexMatch runs s through a one-terminal lexer.
func lexMatch(t *testing.T, pattern string) func(s string) bool {
	n := &nfa{max: 1 << 20}
	if _, err := n.addRegex(pattern); err != nil {
		t.Fatal(err)
	}
	n.finish()
	l := newLexer(n, 1<<24)
	nullable, _ := l.termInfo(0)
	start := l.start([]int32{0})
	return func(s string) bool {
		if s == "" {
			return nullable
		}
		d := start
		for i := 0; i < len(s); i++ {
			d = l.step(d, s[i])
		}
		return d.accID >= 0
	}
}

func TestRegexDFA(t *testing.T) {
	patterns := []string{
		`a+b*`, `[^"\\\x00-\x1f]*`, `"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"`,
		`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, `(?i)straße`, `[α-ω]{2,3}`, `.`, `\p{Greek}+`,
		`[\x{7f}-\x{801}]`, `[\x{ffff}-\x{10000}]`, `[^a]`, `x{0,3}y{2}`, `(a|)*b`, `^ab$`, `(?s).`,
		`\d{3}-\w+`, `[\x{0}-\x{10ffff}]`, `a{0}`, `(?:ab){1,}c`,
		`[ab]*?(?:\A[xy]+$)[ab]*`, `(a$|b)y*`, `x|\Ay`, `a$b`, `(?m)a*^b`, `(?m)(a\n)*^b`, `\Aab\z`, `(^|a)b`,
	}
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "b", "y", "x", "0", "9", "-", ".", "e", "\"", "\\", "u", "ß", "SS", "ς", "α", "ω",
		"\u007f", "\u0080", "\n", "ab", "xy", "\u0800", "\uffff", "\U00010000", "\xed\xa0\x80", "\xff", "\xc3", "\n", "K", "Ω"}
	for _, p := range patterns {
		match := lexMatch(t, p)
		re := regexp.MustCompile(`^(?:` + p + `)$`)
		for range 3000 {
			var b strings.Builder
			for range r.IntN(7) {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			s := b.String()
			want := utf8.ValidString(s) && re.MatchString(s)
			if got := match(s); got != want {
				t.Fatalf("%q on %q: lexer %v, regexp %v", p, s, got, want)
			}
		}
	}
}

func TestUTF8Seqs(t *testing.T) {
	// every rune in [lo, hi] is covered by exactly one sequence; no other valid rune is
	for _, rg := range [][2]rune{{0, 0x10FFFF}, {0x7F, 0x800}, {0x1234, 0x2345}, {0xFFF0, 0x10010}, {0x10400, 0x10FFFF}} {
		var seqs [][][2]byte
		for _, part := range [][2]rune{{rg[0], min(rg[1], 0xD7FF)}, {max(rg[0], 0xE000), rg[1]}} {
			utf8Seqs(part[0], part[1], func(s [][2]byte) { seqs = append(seqs, s) })
		}
		for c := rune(0); c <= 0x10FFFF; c += 7 {
			if c >= 0xD800 && c <= 0xDFFF {
				continue
			}
			enc := []byte(string(c))
			hits := 0
			for _, s := range seqs {
				if len(s) != len(enc) {
					continue
				}
				ok := true
				for i := range s {
					ok = ok && s[i][0] <= enc[i] && enc[i] <= s[i][1]
				}
				if ok {
					hits++
				}
			}
			want := 0
			if c >= rg[0] && c <= rg[1] {
				want = 1
			}
			if hits != want {
				t.Fatalf("range %x-%x: rune %x covered %d times", rg[0], rg[1], c, hits)
			}
		}
	}
}

func TestUnsupportedRegex(t *testing.T) {
	for _, p := range []string{`\bword\b`, `(a)\1`, `a(?=b)`, `x\B`, `[z-a]`, `(?m)a$`} {
		_, err := Compile(ruleIR(map[string]*Expr{"root": Seq(Lit("x"), Re(p))}), Limits{})
		if err == nil || !strings.Contains(err.Error(), "regex") || !strings.Contains(err.Error(), p[:2]) {
			t.Errorf("%q: error %v, want one naming the regex", p, err)
		}
	}
}

// TestAnchorDeadEnds: a prefix that an anchor makes impossible to finish is refused at once
// (it would leave the sampler with nothing to choose later).
func TestAnchorDeadEnds(t *testing.T) {
	for _, c := range []struct{ re, ok, dead string }{
		{`[ab]*?(?:\A[xy]+$)[ab]*`, "xy", "a"},
		{`(a$|b)c`, "bc", "a"},
		{`a\Ab|ac`, "ac", "ab"},
		{`x(?:\A|y)z`, "xyz", "xz"},
	} {
		g := mustCompile(t, ruleIR(map[string]*Expr{"root": Re(c.re)}))
		if ok, whole := matches(g, c.ok); !ok || !whole {
			t.Errorf("%s: %q refused", c.re, c.ok)
		}
		if ok, _ := matches(g, c.dead); ok {
			t.Errorf("%s: dead end %q accepted as a prefix", c.re, c.dead)
		}
	}
}
