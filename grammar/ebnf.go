// This file reads grammars as users write them: llama.cpp's GBNF (gbnf.go) and Lark-style
// EBNF (lark*.go). Here: the entry points and what the two parsers share (syntax errors with
// line and column, string escapes, character classes written as Go regular expressions).

package grammar

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// GBNF parses a grammar in llama.cpp's GBNF (root rule "root").
func GBNF(src string) (*IR, error) { return parseGBNF(strings.TrimPrefix(src, byteOrderMark)) }

// Lark parses a grammar in Lark's EBNF (start rule "start"; terminals in UPPER case).
func Lark(src string) (*IR, error) { return parseLark(strings.TrimPrefix(src, byteOrderMark)) }

// byteOrderMark starts files some editors save; it is not part of the grammar.
const byteOrderMark = "\uFEFF"

// EBNF parses src as GBNF when it defines rules with "::=", else as Lark.
func EBNF(src string) (*IR, error) {
	if gbnfDefLine.MatchString(strings.TrimPrefix(src, byteOrderMark)) {
		return GBNF(src)
	}
	return Lark(src)
}

// gbnfDefLine finds a GBNF rule definition at the start of a line.
var gbnfDefLine = regexp.MustCompile(`(?m)^[ \t]*[A-Za-z0-9_-]+[ \t]*::=`)

// SyntaxError is a grammar that does not parse: where (1-based line and column, the column
// counted in characters) and why.
type SyntaxError struct {
	Format    string // "gbnf" or "lark"
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: %s: line %d:%d: %s", e.Format, e.Line, e.Col, e.Msg)
}

// syntaxErr builds a SyntaxError for byte offset pos of src.
func syntaxErr(format, src string, pos int, msg string, args ...any) *SyntaxError {
	if pos > len(src) {
		pos = len(src)
	}
	if pos < 0 {
		pos = 0
	}
	line := 1 + strings.Count(src[:pos], "\n")
	start := strings.LastIndexByte(src[:pos], '\n') + 1
	return &SyntaxError{Format: format, Line: line, Col: 1 + utf8.RuneCountInString(src[start:pos]), Msg: fmt.Sprintf(msg, args...)}
}

// readEscape decodes the escape sequence at s[0] == '\\'. It returns the code point and the
// bytes used, or ok=false for an escape that is not one of \n \r \t \0 \\ \" \' \[ \] \- \^ \/
// \xHH \uHHHH \UHHHHHHHH (msg says why).
func readEscape(s string) (r rune, n int, msg string) {
	if len(s) < 2 {
		return 0, 0, "unfinished escape at the end of the grammar"
	}
	switch c := s[1]; c {
	case 'n':
		return '\n', 2, ""
	case 'r':
		return '\r', 2, ""
	case 't':
		return '\t', 2, ""
	case '0':
		return 0, 2, ""
	case '\\', '"', '\'', '[', ']', '-', '^', '/':
		return rune(c), 2, ""
	case 'x', 'u', 'U':
		digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if len(s) < 2+digits {
			return 0, 0, fmt.Sprintf("\\%c needs %d hex digits", c, digits)
		}
		var v int64
		for _, d := range []byte(s[2 : 2+digits]) {
			var x byte
			switch {
			case '0' <= d && d <= '9':
				x = d - '0'
			case 'a' <= d && d <= 'f':
				x = d - 'a' + 10
			case 'A' <= d && d <= 'F':
				x = d - 'A' + 10
			default:
				return 0, 0, fmt.Sprintf("\\%c needs %d hex digits", c, digits)
			}
			v = v<<4 | int64(x)
		}
		if v > utf8.MaxRune || (0xD800 <= v && v <= 0xDFFF) {
			return 0, 0, fmt.Sprintf("\\%s is not a Unicode code point", s[1:2+digits])
		}
		return rune(v), 2 + digits, ""
	}
	r, _ = utf8.DecodeRuneInString(s[1:])
	return 0, 0, fmt.Sprintf("unknown escape \\%c", r)
}

// runeRange is lo..hi inclusive.
type runeRange struct{ lo, hi rune }

// classRegex writes a character class over code points as a Go regular expression. An empty
// class matches nothing (the caller turns that into an empty Alt); an empty negated class
// matches any character.
func classRegex(ranges []runeRange, negated bool) string {
	if len(ranges) == 0 {
		return `(?s:.)`
	}
	var b strings.Builder
	b.WriteByte('[')
	if negated {
		b.WriteByte('^')
	}
	for _, r := range ranges {
		b.WriteString(classChar(r.lo))
		if r.hi != r.lo {
			b.WriteByte('-')
			b.WriteString(classChar(r.hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// classChar writes one code point for use inside a Go character class.
func classChar(r rune) string {
	if r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == ' ') {
		return string(r)
	}
	return fmt.Sprintf(`\x{%x}`, r)
}

// single simplifies a one-element Seq or Alt to its element.
func single(kind Kind, subs []*Expr) *Expr {
	if len(subs) == 1 {
		return subs[0]
	}
	return &Expr{Kind: kind, Subs: subs}
}
