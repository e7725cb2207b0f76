// This file implements tokenization of preprocessed template source, following the reference
// lexer: text runs, {# comments #}, {%- / -%} and {{- / -}} whitespace control, operators,
// string literals with escapes, numbers (with a folded unary sign) and identifiers.
package chattmpl

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

var opTable = []struct {
	seq string
	typ tokType
}{
	{"{%", tOpenStmt}, {"%}", tCloseStmt}, {"{{", tOpenExpr}, {"}}", tCloseExpr},
	{"(", tOpenParen}, {")", tCloseParen}, {"{", tOpenBrace}, {"}", tCloseBrace},
	{"[", tOpenBracket}, {"]", tCloseBracket}, {",", tComma}, {".", tDot}, {":", tColon},
	{"|", tPipe}, {"<=", tComparison}, {">=", tComparison}, {"==", tComparison},
	{"!=", tComparison}, {"<", tComparison}, {">", tComparison}, {"+", tAdditive},
	{"-", tAdditive}, {"~", tAdditive}, {"**", tPower}, {"*", tMultiplicative},
	{"//", tMultiplicative}, {"/", tMultiplicative}, {"%", tMultiplicative}, {"=", tEquals},
}

var escapes = map[byte]string{'n': "\n", 't': "\t", 'r': "\r", 'b': "\b", 'f': "\f", 'v': "\v",
	'\'': "'", '"': "\"", '\\': "\\"}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWord(c byte) bool {
	return isDigit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

type lexer struct {
	src  string // original source, for error positions
	p    pre
	pos  int
	toks []token
}

func (l *lexer) errAt(i int, format string, args ...any) error {
	off := len(l.src)
	if i < len(l.p.off) {
		off = l.p.off[i]
	}
	line, col := lineCol(l.src, off)
	return &Error{Line: line, Col: col, Msg: sprintf(format, args...)}
}

func (l *lexer) origOff(i int) int {
	if i < len(l.p.off) {
		return l.p.off[i]
	}
	return len(l.src)
}

func (l *lexer) push(typ tokType, val string, at int) {
	l.toks = append(l.toks, token{typ: typ, val: val, pos: l.origOff(at)})
}

func (l *lexer) lastType() (tokType, bool) {
	if len(l.toks) == 0 {
		return 0, false
	}
	return l.toks[len(l.toks)-1].typ, true
}

func (l *lexer) stripTrailing() {
	if n := len(l.toks); n > 0 && l.toks[n-1].typ == tText {
		v := strings.TrimRightFunc(l.toks[n-1].val, isJSSpace)
		if v == "" {
			l.toks = l.toks[:n-1]
		} else {
			l.toks[n-1].val = v
		}
	}
}

func (l *lexer) skipSpace() {
	for n := spaceAt(l.p.s, l.pos); n > 0; n = spaceAt(l.p.s, l.pos) {
		l.pos += n
	}
}

func (l *lexer) hasPrefix(s string) bool {
	return strings.HasPrefix(string(l.p.s[l.pos:min(len(l.p.s), l.pos+len(s))]), s)
}

// stringBody reads a quoted string's content up to (not including) the closing quote.
func (l *lexer) stringBody(quote byte) (string, error) {
	s := l.p.s
	var b strings.Builder
	for l.pos < len(s) && s[l.pos] != quote {
		if s[l.pos] == '\\' {
			l.pos++
			if l.pos >= len(s) {
				return "", l.errAt(l.pos, "Unexpected end of input")
			}
			e := s[l.pos]
			l.pos++
			if e == 'x' || e == 'u' {
				n := 2
				if e == 'u' {
					n = 4
				}
				if l.pos+n > len(s) {
					return "", l.errAt(l.pos, "Invalid hexadecimal escape sequence")
				}
				v, err := strconv.ParseUint(string(s[l.pos:l.pos+n]), 16, 32)
				if err != nil || strings.ContainsAny(string(s[l.pos:l.pos+n]), "+-") {
					return "", l.errAt(l.pos, "Invalid hexadecimal escape sequence: \\%c%s", e, s[l.pos:l.pos+n])
				}
				l.pos += n
				r := rune(v)
				if r >= 0xd800 && r < 0xdc00 && l.pos+6 <= len(s) && s[l.pos] == '\\' && s[l.pos+1] == 'u' {
					if lo, err := strconv.ParseUint(string(s[l.pos+2:l.pos+6]), 16, 32); err == nil && lo >= 0xdc00 && lo < 0xe000 {
						r = 0x10000 + (r-0xd800)<<10 + rune(lo-0xdc00)
						l.pos += 6
					}
				}
				b.WriteRune(r)
				continue
			}
			u, ok := escapes[e]
			if !ok {
				return "", l.errAt(l.pos-1, "Unexpected escaped character: %c", e)
			}
			b.WriteString(u)
			continue
		}
		b.WriteByte(s[l.pos])
		l.pos++
	}
	if l.pos >= len(s) {
		return "", l.errAt(l.pos, "Unexpected end of input")
	}
	return b.String(), nil
}

func (l *lexer) digits() string {
	st := l.pos
	for l.pos < len(l.p.s) && isDigit(l.p.s[l.pos]) {
		l.pos++
	}
	return string(l.p.s[st:l.pos])
}

// tokenize preprocesses src and splits it into tokens.
func tokenize(src string) ([]token, error) {
	l := &lexer{src: src, p: preprocess(src)}
	s := l.p.s
	curly := 0
main:
	for l.pos < len(s) {
		if lt, ok := l.lastType(); !ok || lt == tCloseStmt || lt == tCloseExpr || lt == tComment {
			st := l.pos
			for l.pos < len(s) && !(s[l.pos] == '{' && l.pos+1 < len(s) && (s[l.pos+1] == '%' || s[l.pos+1] == '{' || s[l.pos+1] == '#')) {
				l.pos++
			}
			if l.pos > st {
				l.push(tText, string(s[st:l.pos]), st)
				continue
			}
		}
		if l.hasPrefix("{#") {
			st := l.pos
			l.pos += 2
			stripBefore := l.pos < len(s) && s[l.pos] == '-'
			if stripBefore {
				l.pos++
			}
			cst := l.pos
			for l.pos+1 >= len(s) || s[l.pos] != '#' || s[l.pos+1] != '}' {
				if l.pos+2 >= len(s) {
					return nil, l.errAt(st, "Missing end of comment tag")
				}
				l.pos++
			}
			comment := string(s[cst:l.pos])
			stripAfter := strings.HasSuffix(comment, "-")
			if stripAfter {
				comment = comment[:len(comment)-1]
			}
			if stripBefore {
				l.stripTrailing()
			}
			l.push(tComment, comment, st)
			l.pos += 2
			if stripAfter {
				l.skipSpace()
			}
			continue
		}
		if l.hasPrefix("{%-") {
			l.stripTrailing()
			l.push(tOpenStmt, "{%", l.pos)
			l.pos += 3
			continue
		}
		if l.hasPrefix("{{-") {
			l.stripTrailing()
			l.push(tOpenExpr, "{{", l.pos)
			curly = 0
			l.pos += 3
			continue
		}
		l.skipSpace()
		if l.pos >= len(s) {
			break
		}
		if l.hasPrefix("-%}") {
			l.push(tCloseStmt, "%}", l.pos)
			l.pos += 3
			l.skipSpace()
			continue
		}
		if l.hasPrefix("-}}") {
			l.push(tCloseExpr, "}}", l.pos)
			l.pos += 3
			l.skipSpace()
			continue
		}
		c := s[l.pos]
		if c == '-' || c == '+' {
			lt, ok := l.lastType()
			if !ok || lt == tText {
				return nil, l.errAt(l.pos, "Unexpected character: %c", c)
			}
			switch lt {
			case tIdent, tNumber, tString, tCloseParen, tCloseBracket:
			default:
				st := l.pos
				l.pos++
				num := l.digits()
				if num != "" && l.pos+1 < len(s) && s[l.pos] == '.' && isDigit(s[l.pos+1]) {
					l.pos++
					num += "." + l.digits()
				}
				if num != "" {
					l.push(tNumber, string(c)+num, st)
				} else {
					l.push(tUnary, string(c), st)
				}
				continue main
			}
		}
		for _, op := range opTable {
			if op.seq == "}}" && curly > 0 {
				continue
			}
			if l.hasPrefix(op.seq) {
				l.push(op.typ, op.seq, l.pos)
				switch op.typ {
				case tOpenExpr:
					curly = 0
				case tOpenBrace:
					curly++
				case tCloseBrace:
					curly--
				}
				l.pos += len(op.seq)
				continue main
			}
		}
		if c == '\'' || c == '"' {
			st := l.pos
			l.pos++
			str, err := l.stringBody(c)
			if err != nil {
				return nil, err
			}
			l.pos++
			l.push(tString, str, st)
			continue
		}
		if isDigit(c) {
			st := l.pos
			num := l.digits()
			if lt, _ := l.lastType(); lt != tDot && l.pos+1 < len(s) && s[l.pos] == '.' && isDigit(s[l.pos+1]) {
				l.pos++
				num += "." + l.digits()
			}
			l.push(tNumber, num, st)
			continue
		}
		if isWord(c) {
			st := l.pos
			for l.pos < len(s) && isWord(s[l.pos]) {
				l.pos++
			}
			l.push(tIdent, string(s[st:l.pos]), st)
			continue
		}
		r, _ := utf8.DecodeRune(s[l.pos:])
		return nil, l.errAt(l.pos, "Unexpected character: %c", r)
	}
	return l.toks, nil
}
