// This file writes regular expressions over property names for the object compiler: keys
// other than a set of names (with canonical escapes only, so each name has one spelling), and
// whether two key patterns can match a common key.

package grammar

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// notNames is a regex for JSON string contents that decode to none of names; escapes are
// limited to the canonical ones (a subset) so every character has one spelling.
func notNames(names []string) string {
	any := `(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u00[01][0-9a-fA-F])`
	if len(names) == 0 {
		return jsonChar + `*`
	}
	type node struct {
		kids  map[rune]*node
		order []rune
		end   bool
	}
	root := &node{kids: map[rune]*node{}}
	for _, n := range names {
		cur := root
		for _, r := range n {
			if cur.kids[r] == nil {
				cur.kids[r] = &node{kids: map[rune]*node{}}
				cur.order = append(cur.order, r)
			}
			cur = cur.kids[r]
		}
		cur.end = true
	}
	var gen func(n *node) string
	gen = func(n *node) string {
		var alts []string
		if !n.end {
			alts = append(alts, "")
		}
		// a character that leaves the trie, then anything
		var rawOut []rune
		var escOut []string
		for _, r := range n.order {
			if r < 0x20 || r == '"' || r == '\\' {
				escOut = append(escOut, r2esc(r))
			} else {
				rawOut = append(rawOut, r)
			}
		}
		other := `[^"\\\x00-\x1f` + quoteClass(rawOut) + `]`
		escAlts := []string{`\\["\\bfnrt]`, `\\u00[01][0-9a-fA-F]`}
		if len(escOut) > 0 {
			// escapes not leading into the trie
			escAlts = []string{`(?:` + escapesExcept(escOut) + `)`}
		}
		alts = append(alts, `(?:`+other+`|`+strings.Join(escAlts, "|")+`)`+any+`*`)
		for _, r := range n.order {
			var lit string
			if r < 0x20 || r == '"' || r == '\\' {
				lit = regexp.QuoteMeta(r2esc(r))
			} else {
				lit = regexp.QuoteMeta(string(r))
			}
			alts = append(alts, lit+`(?:`+gen(n.kids[r])+`)`)
		}
		return strings.Join(alts, "|")
	}
	return `(?:` + gen(root) + `)`
}

func r2esc(r rune) string { s := jsonString(string(r)); return s[1 : len(s)-1] }

func quoteClass(rs []rune) string {
	var b strings.Builder
	for _, r := range rs {
		if strings.ContainsRune(`\]-^[`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// escapesExcept: canonical escapes other than those listed.
func escapesExcept(except []string) string {
	var alts []string
	for _, r := range []rune{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
		21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, '"', '\\'} {
		if e := r2esc(r); !containsStr(except, e) {
			alts = append(alts, regexp.QuoteMeta(e))
		}
	}
	return strings.Join(alts, "|")
}

// prefixDisjoint: both patterns are anchored at the start with literal prefixes neither of
// which begins the other, so no string matches both.
func prefixDisjoint(a, b string) bool {
	pa, pb := literalPrefix(a), literalPrefix(b)
	if pa == "" || pb == "" {
		return false
	}
	return !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa)
}

func literalPrefix(p string) string {
	re, _, ok := parsePattern(p)
	if !ok || re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText {
		return ""
	}
	var b strings.Builder
	for _, s := range re.Sub[1:] {
		if s.Op != syntax.OpLiteral || s.Flags&syntax.FoldCase != 0 {
			break
		}
		b.WriteString(string(s.Rune))
	}
	return b.String()
}
