// This file reads GBNF's terminals: string literals and character classes, with their
// escapes.

package grammar

import "unicode/utf8"

// char reads one character of a literal or class (an escape or a UTF-8 code point).
func (p *gbnfParser) char() (rune, error) {
	if p.src[p.pos] == '\\' {
		r, n, msg := readEscape(p.src[p.pos:])
		if msg != "" {
			return 0, p.errAt(p.pos, "%s", msg)
		}
		p.pos += n
		return r, nil
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == utf8.RuneError && n == 1 {
		return 0, p.errAt(p.pos, "invalid UTF-8")
	}
	p.pos += n
	return r, nil
}

func (p *gbnfParser) literal() (*Expr, error) {
	open := p.pos
	p.pos++
	var buf []byte
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, p.errAt(open, "unterminated string (no closing \" on the line)")
		}
		if p.src[p.pos] == '"' {
			p.pos++
			break
		}
		r, err := p.char()
		if err != nil {
			return nil, err
		}
		buf = utf8.AppendRune(buf, r)
	}
	if len(buf) == 0 {
		return Seq(), nil
	}
	return Lit(string(buf)), nil
}

func (p *gbnfParser) class() (*Expr, error) {
	open := p.pos
	p.pos++
	negated := false
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		negated = true
		p.pos++
	}
	var ranges []runeRange
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, p.errAt(open, "unterminated character class (no closing ] on the line)")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		at := p.pos
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errAt(at, "bad range %q-%q in character class (the end is below the start)", lo, hi)
			}
		}
		ranges = append(ranges, runeRange{lo, hi})
	}
	if len(ranges) == 0 && !negated {
		return Alt(), nil // [] matches nothing
	}
	return Re(classRegex(ranges, negated)), nil
}
