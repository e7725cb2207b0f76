// Tests for Match, the reference recognizer.

package grammar

import "testing"

func TestMatchBasics(t *testing.T) {
	g := &IR{Start: "s", Rules: map[string]*Expr{
		// Left recursion: s ::= s "+" n | n ; n ::= /[0-9]+/
		"s": Alt(Seq(Ref("s"), Lit("+"), Ref("n")), Ref("n")),
		"n": Re(`[0-9]+`),
	}}
	for in, want := range map[string]bool{"1": true, "12+3+45": true, "": false, "1+": false, "+1": false, "1++2": false} {
		if got := g.Match([]byte(in)); got != want {
			t.Errorf("Match(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestMatchRepeatAndAnchors(t *testing.T) {
	g := &IR{Start: "r", Rules: map[string]*Expr{
		"r": Seq(Rep(Alt(Lit("a"), Seq()), 2, 3), Re(`^b$`), Re(`c\b`), Re(`(?:)`)),
	}}
	for in, want := range map[string]bool{"b" + "c": true, "abc": true, "aaabc": true, "aaaabc": false, "ab": false, "abcc": false} {
		if got := g.Match([]byte(in)); got != want {
			t.Errorf("Match(%q) = %v, want %v", in, got, want)
		}
	}
	// A regex terminal matches its whole text: ^ and $ refer to the terminal's ends.
	g = &IR{Start: "r", Rules: map[string]*Expr{"r": Seq(Lit("x"), Re(`^[0-9]+$`), Lit("y"))}}
	if !g.Match([]byte("x123y")) || g.Match([]byte("xy")) || g.Match([]byte("x12ay")) {
		t.Error("anchors inside a terminal")
	}
	if (&IR{Start: "missing", Rules: map[string]*Expr{}}).Match(nil) {
		t.Error("an invalid grammar matched")
	}
}
