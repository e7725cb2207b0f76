// This file checks the Matcher against the reference recognizer: hand-written and random IRs,
// every string over a small alphabet, masks against AcceptBytes token by token, and the
// Matcher's other calls (Rollback, ForcedBytes, Done, CanEnd, EOS, Limits errors).

package grammar

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustCompile(t testing.TB, ir *IR) *Grammar {
	t.Helper()
	g, err := Compile(ir, Limits{})
	if err != nil {
		t.Fatalf("Compile: %v\n%s", err, ir)
	}
	return g
}

func ruleIR(rules map[string]*Expr) *IR { return &IR{Start: "root", Rules: rules} }

// matches runs s through a fresh Matcher.
func matches(g *Grammar, s string) (prefixOK, whole bool) {
	m := g.NewMatcher(nil)
	if m.AcceptBytes([]byte(s)) != nil {
		return false, false
	}
	return true, m.CanEnd()
}

// allStrings lists the strings over alpha of length up to n.
func allStrings(alpha []string, n int) []string {
	out := []string{""}
	layer := []string{""}
	for range n {
		var next []string
		for _, p := range layer {
			for _, a := range alpha {
				next = append(next, p+a)
			}
		}
		out = append(out, next...)
		layer = next
	}
	return out
}

var testAlpha = []string{"a", "b", "c", "é", "\xc3"}

// crossCheck compares g with the reference on strs; it also checks that every prefix of an
// accepted string is accepted.
func crossCheck(t *testing.T, ir *IR, g *Grammar, strs []string) {
	t.Helper()
	ref := newRef(ir)
	for _, s := range strs {
		want := ref.accepts(s)
		_, got := matches(g, s)
		if got != want {
			t.Fatalf("%q: matcher %v, reference %v\n%s", s, got, want, ir)
		}
		if want {
			for i := range s {
				if ok, _ := matches(g, s[:i]); !ok {
					t.Fatalf("prefix %q of accepted %q rejected\n%s", s[:i], s, ir)
				}
			}
		}
	}
}

var handIRs = map[string]*IR{
	"yesno": ruleIR(map[string]*Expr{"root": Alt(Lit("yes"), Lit("no"))}),
	"star":  ruleIR(map[string]*Expr{"root": Seq(Lit("a"), Star(Lit("b")), Lit("c"))}),
	"nested": ruleIR(map[string]*Expr{
		"root": Alt(Lit("c"), Seq(Lit("a"), Ref("root"), Lit("b"))),
	}),
	"leftrec": ruleIR(map[string]*Expr{
		"root": Alt(Lit("a"), Seq(Ref("root"), Lit("b"))),
	}),
	"regexes": ruleIR(map[string]*Expr{
		"root": Seq(Re(`a+`), Re(`[ab]*`), Re(`c?`)),
	}),
	"ambiguous": ruleIR(map[string]*Expr{
		"root": Star(Alt(Re(`a|ab`), Re(`b+`), Lit("c"))),
	}),
	"unicode": ruleIR(map[string]*Expr{
		"root": Seq(Re(`[^a]`), Re(`.*`), Re(`(?i)A|é`)),
	}),
	"nullable": ruleIR(map[string]*Expr{
		"root": Seq(Ref("x"), Ref("x"), Lit("c"), Ref("x")),
		"x":    Alt(Seq(), Re(`b*`), Ref("x")),
	}),
	"repeat": ruleIR(map[string]*Expr{
		"root": Seq(Rep(Alt(Lit("a"), Lit("bc")), 2, 4), Rep(Lit(""), 3, 5), Rep(Re(`c?`), 1, 2)),
	}),
	"emptyalt": ruleIR(map[string]*Expr{
		"root": Alt(Seq(Lit("a"), Alt()), Lit("b")),
	}),
	"anchors": ruleIR(map[string]*Expr{"root": Re(`^a(b|c)*$`)}),
	"inner anchors": ruleIR(map[string]*Expr{
		"root": Seq(Lit("c"), Re(`[ab]*?(?:\A[ab]b$)[ab]*`), Re(`(c$|a)b*`), Re(`c*`)),
	}),
	"bigrep": ruleIR(map[string]*Expr{"root": Rep(Lit("a"), 0, 1000)}),
}

func TestHandWritten(t *testing.T) {
	strs := allStrings(testAlpha, 5)
	for name, ir := range handIRs {
		t.Run(name, func(t *testing.T) {
			crossCheck(t, ir, mustCompile(t, ir), strs)
		})
	}
}

// randExpr makes a small random expression over rules r0..r2.
func randExpr(r *rand.Rand, depth int) *Expr {
	lits := []string{"", "a", "b", "c", "ab", "é", "ca"}
	res := []string{`a+`, `[ab]*`, `b?c`, `(ab|c){1,3}`, `[^a]`, `é|a`, `c*`, `a|bc`, `[a-c]{2}`, `(?i)A`, `.`, `[^b]+`, `x*`, `a*(?:\Ab$)c*`, `(a$|b)c`}
	k := r.IntN(10)
	if depth <= 0 {
		k = r.IntN(3)
	}
	switch k {
	case 0:
		return Lit(lits[r.IntN(len(lits))])
	case 1:
		return Re(res[r.IntN(len(res))])
	case 2:
		return Ref(fmt.Sprintf("r%d", r.IntN(3)))
	case 3, 4, 5:
		subs := make([]*Expr, r.IntN(4))
		for i := range subs {
			subs[i] = randExpr(r, depth-1)
		}
		return Seq(subs...)
	case 6, 7, 8:
		subs := make([]*Expr, r.IntN(4))
		for i := range subs {
			subs[i] = randExpr(r, depth-1)
		}
		return Alt(subs...)
	}
	lo := r.IntN(3)
	hi := []int{-1, lo, lo + 1, lo + 2}[r.IntN(4)]
	return Rep(randExpr(r, depth-1), lo, hi)
}

func randIR(r *rand.Rand) *IR {
	ir := &IR{Start: "r0", Rules: map[string]*Expr{}}
	for i := range 3 {
		ir.Rules[fmt.Sprintf("r%d", i)] = randExpr(r, 3)
	}
	return ir
}

func TestRandomGrammars(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := allStrings(testAlpha, 4)
	n := 300
	if testing.Short() {
		n = 60
	}
	compiled := 0
	for i := range n {
		ir := randIR(r)
		g, err := Compile(ir, Limits{})
		if err != nil {
			if !strings.Contains(err.Error(), "matches no string") {
				t.Fatalf("grammar %d: %v\n%s", i, err, ir)
			}
			ref := newRef(ir)
			for _, s := range strs {
				if ref.accepts(s) {
					t.Fatalf("grammar %d: Compile says empty but the reference accepts %q\n%s", i, s, ir)
				}
			}
			continue
		}
		compiled++
		crossCheck(t, ir, g, strs)
	}
	if compiled < n/3 {
		t.Errorf("only %d of %d random grammars compiled", compiled, n)
	}
}
