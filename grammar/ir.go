// This file defines the IR every frontend produces and Compile consumes: named rules over
// sequences, alternatives, bounded repeats, rule references and byte-level terminals (literal
// strings and regular expressions).

package grammar

import (
	"fmt"
	"sort"
	"strings"
)

// Kind is the type of an Expr node.
type Kind uint8

const (
	KindSeq     Kind = iota // Subs in order (empty Seq = the empty string)
	KindAlt                 // one of Subs (empty Alt = nothing: matches no string)
	KindLiteral             // Text, byte for byte
	KindRegex               // Text is a regular expression (Go regexp/syntax, Perl flags) matched against a whole terminal
	KindRef                 // the rule named Text
	KindRepeat              // Subs[0] repeated Min..Max times (Max < 0 = unbounded)
)

// Expr is one node of a rule's right-hand side.
type Expr struct {
	Kind     Kind
	Text     string
	Subs     []*Expr
	Min, Max int
}

// IR is a context-free grammar over bytes. The language of the IR is the language of its
// Start rule, read as a plain CFG whose KindLiteral/KindRegex nodes stand for the byte strings
// they match. Compile must accept exactly that language.
type IR struct {
	Start string
	Rules map[string]*Expr
}

// Constructors, for frontends.

func Seq(subs ...*Expr) *Expr { return &Expr{Kind: KindSeq, Subs: subs} }
func Alt(subs ...*Expr) *Expr { return &Expr{Kind: KindAlt, Subs: subs} }
func Lit(s string) *Expr      { return &Expr{Kind: KindLiteral, Text: s} }
func Re(pattern string) *Expr { return &Expr{Kind: KindRegex, Text: pattern} }
func Ref(rule string) *Expr   { return &Expr{Kind: KindRef, Text: rule} }
func Opt(e *Expr) *Expr       { return &Expr{Kind: KindRepeat, Subs: []*Expr{e}, Min: 0, Max: 1} }
func Star(e *Expr) *Expr      { return &Expr{Kind: KindRepeat, Subs: []*Expr{e}, Min: 0, Max: -1} }
func Plus(e *Expr) *Expr      { return &Expr{Kind: KindRepeat, Subs: []*Expr{e}, Min: 1, Max: -1} }
func Rep(e *Expr, lo, hi int) *Expr {
	return &Expr{Kind: KindRepeat, Subs: []*Expr{e}, Min: lo, Max: hi}
}

// Validate checks that Start and every referenced rule exist and repeats are well formed.
func (g *IR) Validate() error {
	if g == nil || g.Rules == nil {
		return fmt.Errorf("grammar: empty grammar")
	}
	if _, ok := g.Rules[g.Start]; !ok {
		return fmt.Errorf("grammar: start rule %q is not defined", g.Start)
	}
	var check func(e *Expr) error
	check = func(e *Expr) error {
		if e == nil {
			return fmt.Errorf("grammar: nil expression")
		}
		switch e.Kind {
		case KindRef:
			if _, ok := g.Rules[e.Text]; !ok {
				return fmt.Errorf("grammar: rule %q is not defined", e.Text)
			}
		case KindRepeat:
			if len(e.Subs) != 1 || e.Min < 0 || (e.Max >= 0 && e.Max < e.Min) {
				return fmt.Errorf("grammar: bad repeat {%d,%d}", e.Min, e.Max)
			}
		}
		for _, s := range e.Subs {
			if err := check(s); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range g.ruleNames() {
		if err := check(g.Rules[name]); err != nil {
			return fmt.Errorf("%w (in rule %q)", err, name)
		}
	}
	return nil
}

func (g *IR) ruleNames() []string {
	names := make([]string, 0, len(g.Rules))
	for n := range g.Rules {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// String prints the IR in a GBNF-like form (for debugging and error messages).
func (g *IR) String() string {
	var b strings.Builder
	for _, n := range g.ruleNames() {
		fmt.Fprintf(&b, "%s ::= %s\n", n, g.Rules[n])
	}
	return b.String()
}

func (e *Expr) String() string {
	switch e.Kind {
	case KindLiteral:
		return fmt.Sprintf("%q", e.Text)
	case KindRegex:
		return "/" + e.Text + "/"
	case KindRef:
		return e.Text
	case KindRepeat:
		return fmt.Sprintf("(%s){%d,%d}", e.Subs[0], e.Min, e.Max)
	}
	parts := make([]string, len(e.Subs))
	for i, s := range e.Subs {
		parts[i] = s.String()
	}
	if e.Kind == KindAlt {
		return "(" + strings.Join(parts, " | ") + ")"
	}
	return "(" + strings.Join(parts, " ") + ")"
}
