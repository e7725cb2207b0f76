// This file implements the lexer: the reference's source preprocessing (trim_blocks,
// lstrip_blocks, dropping one trailing newline, removing {% generation %} tags) and
// tokenization, keeping each token's offset in the original source for line:col errors.
package chattmpl

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokType int

const (
	tText tokType = iota
	tNumber
	tString
	tIdent
	tEquals
	tOpenParen
	tCloseParen
	tOpenStmt
	tCloseStmt
	tOpenExpr
	tCloseExpr
	tOpenBracket
	tCloseBracket
	tOpenBrace
	tCloseBrace
	tComma
	tDot
	tColon
	tPipe
	tAdditive
	tMultiplicative
	tPower
	tComparison
	tUnary
	tComment
)

var tokNames = [...]string{"Text", "NumericLiteral", "StringLiteral", "Identifier", "Equals",
	"OpenParen", "CloseParen", "OpenStatement", "CloseStatement", "OpenExpression",
	"CloseExpression", "OpenSquareBracket", "CloseSquareBracket", "OpenCurlyBracket",
	"CloseCurlyBracket", "Comma", "Dot", "Colon", "Pipe", "AdditiveBinaryOperator",
	"MultiplicativeBinaryOperator", "ExponentiationBinaryOperator", "ComparisonBinaryOperator",
	"UnaryOperator", "Comment"}

func (t tokType) String() string { return tokNames[t] }

type token struct {
	typ tokType
	val string
	pos int // byte offset in the original source
}

// Error is a template syntax or render error; Line and Col (1-based, col in characters) locate
// it in the template source when known (0 otherwise).
type Error struct {
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
	}
	return e.Msg
}

// lineCol converts a byte offset of src to a 1-based line and column (in runes).
func lineCol(src string, off int) (int, int) {
	if off > len(src) {
		off = len(src)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + strings.Count(src[:off], "\n")
	start := strings.LastIndexByte(src[:off], '\n') + 1
	return line, 1 + utf8.RuneCountInString(src[start:off])
}

// pre is preprocessed text with the original offset of every byte.
type pre struct {
	s   []byte
	off []int
}

func (p *pre) add(b byte, o int) { p.s = append(p.s, b); p.off = append(p.off, o) }

// isJSSpace reports whether r matches JavaScript's \s.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// spaceAt returns the byte length of the JS whitespace character at s[i], or 0.
func spaceAt(s []byte, i int) int {
	if i >= len(s) {
		return 0
	}
	if s[i] < utf8.RuneSelf {
		if isJSSpace(rune(s[i])) {
			return 1
		}
		return 0
	}
	r, n := utf8.DecodeRune(s[i:])
	if isJSSpace(r) {
		return n
	}
	return 0
}

// lineStartAt reports whether i starts a line in the sense of a JavaScript multiline ^.
func lineStartAt(s []byte, i int) bool {
	if i == 0 {
		return true
	}
	if s[i-1] == '\n' || s[i-1] == '\r' {
		return true
	}
	return i >= 3 && s[i-3] == 0xe2 && s[i-2] == 0x80 && (s[i-1] == 0xa8 || s[i-1] == 0xa9)
}

func preprocess(src string) pre {
	var p pre
	for i := 0; i < len(src); i++ {
		p.add(src[i], i)
	}
	if strings.HasSuffix(src, "\n") {
		p.s, p.off = p.s[:len(p.s)-1], p.off[:len(p.off)-1]
	}
	// lstrip_blocks: /^[ \t]*({[#%-])/gm -> "$1"
	var q pre
	for i := 0; i < len(p.s); {
		if lineStartAt(p.s, i) {
			j := i
			for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
				j++
			}
			if j > i && j+1 < len(p.s) && p.s[j] == '{' && (p.s[j+1] == '#' || p.s[j+1] == '%' || p.s[j+1] == '-') {
				i = j
			}
		}
		q.add(p.s[i], p.off[i])
		i++
	}
	// trim_blocks: /([#%-]})\n/g -> "$1"
	var r pre
	for i := 0; i < len(q.s); {
		if i+2 < len(q.s) && (q.s[i] == '#' || q.s[i] == '%' || q.s[i] == '-') && q.s[i+1] == '}' && q.s[i+2] == '\n' {
			r.add(q.s[i], q.off[i])
			r.add(q.s[i+1], q.off[i+1])
			i += 3
			continue
		}
		r.add(q.s[i], q.off[i])
		i++
	}
	return removeGeneration(r)
}

// removeGeneration drops {% generation %} / {% endgeneration %} tags, keeping their body, with
// the surrounding whitespace removed on a side marked with '-'.
func removeGeneration(p pre) pre {
	var out pre
	last := 0 // bytes of p before last are already handled
	for i := 0; i < len(p.s); i++ {
		if p.s[i] != '{' || i+1 >= len(p.s) || p.s[i+1] != '%' {
			continue
		}
		end, lstrip, rstrip, ok := matchGenerationTag(p.s, i)
		if !ok {
			continue
		}
		// leading whitespace run (not before last)
		ws := i
		for ws > last {
			j := ws - 1
			for j > last && p.s[j]&0xc0 == 0x80 {
				j--
			}
			if spaceAt(p.s, j) != ws-j {
				break
			}
			ws = j
		}
		after := end
		for {
			n := spaceAt(p.s, after)
			if n == 0 {
				break
			}
			after += n
		}
		for k := last; k < ws; k++ {
			out.add(p.s[k], p.off[k])
		}
		if !lstrip {
			for k := ws; k < i; k++ {
				out.add(p.s[k], p.off[k])
			}
		}
		if !rstrip {
			for k := end; k < after; k++ {
				out.add(p.s[k], p.off[k])
			}
		}
		last = after
		i = after - 1
	}
	for k := last; k < len(p.s); k++ {
		out.add(p.s[k], p.off[k])
	}
	return out
}

// matchGenerationTag matches {%-?\s*(end)?generation\s*-?%} at i.
func matchGenerationTag(s []byte, i int) (end int, lstrip, rstrip, ok bool) {
	j := i + 2
	if j < len(s) && s[j] == '-' {
		lstrip = true
		j++
	}
	for n := spaceAt(s, j); n > 0; n = spaceAt(s, j) {
		j += n
	}
	rest := string(s[j:])
	switch {
	case strings.HasPrefix(rest, "endgeneration"):
		j += len("endgeneration")
	case strings.HasPrefix(rest, "generation"):
		j += len("generation")
	default:
		return 0, false, false, false
	}
	for n := spaceAt(s, j); n > 0; n = spaceAt(s, j) {
		j += n
	}
	if j < len(s) && s[j] == '-' {
		rstrip = true
		j++
	}
	if j+1 < len(s) && s[j] == '%' && s[j+1] == '}' {
		return j + 2, lstrip, rstrip, true
	}
	return 0, false, false, false
}
