// This file has the two simplest frontends: a regular expression, and a choice of strings.

package grammar

import (
	"fmt"
	"regexp/syntax"
)

// Regex compiles a regular expression (Go regexp/syntax with Perl flags, the ECMAScript
// subset JSON Schema patterns use) that the whole output must match.
func Regex(pattern string) (*IR, error) {
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return nil, fmt.Errorf("grammar: regex %q: %w", pattern, err)
	}
	return &IR{Start: "root", Rules: map[string]*Expr{"root": Re(pattern)}}, nil
}

// Choice is the language of exactly the given strings.
func Choice(options []string) (*IR, error) {
	if len(options) == 0 {
		return nil, fmt.Errorf("grammar: choice needs at least one option")
	}
	alts := make([]*Expr, len(options))
	for i, o := range options {
		alts[i] = Lit(o)
	}
	return &IR{Start: "root", Rules: map[string]*Expr{"root": Alt(alts...)}}, nil
}
