// This file adapts the Python regular expressions Lark grammars contain to Go's syntax where
// the two differ in spelling only: \uXXXX and \UXXXXXXXX escapes, \Z, and the {,n} repeat
// (which Go would read as literal text). Lookaround and backreferences have no Go form and
// stay as they are, for Go's parser to refuse.

package grammar

import (
	"regexp"
	"strings"
)

var pyOpenRepeat = regexp.MustCompile(`^\{,[0-9]+\}`)

func pythonRegex(s string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			switch n := s[i+1]; {
			case n == 'u' && isHexRun(s[i+2:], 4):
				b.WriteString(`\x{` + s[i+2:i+6] + `}`)
				i += 5
			case n == 'U' && isHexRun(s[i+2:], 8):
				b.WriteString(`\x{` + s[i+2:i+10] + `}`)
				i += 9
			case n == 'Z' && !inClass:
				b.WriteString(`\z`)
				i++
			default:
				b.WriteString(s[i : i+2])
				i++
			}
			continue
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// a ] right after [ or [^ is a literal ]
			if i+1 < len(s) && s[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(s) && s[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
			continue
		case c == ']' && inClass:
			inClass = false
		case c == '{' && !inClass && pyOpenRepeat.MatchString(s[i:]):
			b.WriteString("{0")
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isHexRun(s string, n int) bool {
	if len(s) < n {
		return false
	}
	for _, c := range []byte(s[:n]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
