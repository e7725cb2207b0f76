// This file emits JSON strings: any string, length bounds (in code points: an escape is one
// character, a surrogate pair escape too), formats, and patterns (translated from ECMAScript
// and re-encoded so the pattern constrains the decoded string).

package grammar

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

const (
	rawChar   = `[^"\\\x00-\x1f]`
	hex       = `[0-9a-fA-F]`
	escChar   = `\\(?:["\\/bfnrt]|u(?:[0-9a-cA-CefEF]` + hex + `{3}|[dD][0-7]` + hex + `{2}|[dD][89abAB]` + hex + `{2}\\u[dD][c-fC-F]` + hex + `{2}))`
	jsonChar  = `(?:` + rawChar + `|` + escChar + `)`
	stringRe  = `"` + jsonChar + `*"`
	maxRegexN = 200 // Go limits the size of a repeated regex
)

func (c *schemaCompiler) stringExpr(m *msch) *Expr {
	if m.maxLen >= 0 && m.minLen > m.maxLen {
		return c.empty("minLength/maxLength at %s: no string has a length in range", m.at)
	}
	if len(m.formats) > 1 || len(m.patterns) > 1 || len(m.formats)+len(m.patterns) > 1 {
		unsupported("pattern", m.at+" (several patterns/formats on one string)")
	}
	if len(m.notStrings) > 0 {
		if len(m.formats)+len(m.patterns) > 0 || m.minLen > 0 || m.maxLen >= 0 {
			unsupported("not", m.at+" (excluded strings with other string constraints)")
		}
		return Re(`"` + notNames(m.notStrings) + `"`)
	}
	content, lenLo, lenHi := "", 0, -1 // content regex and the lengths it implies
	if len(m.formats) == 1 {
		content = formatRes[m.formats[0]]
		lenLo, lenHi = regexLengths(content)
		if lenLo < m.minLen || m.maxLen >= 0 && (lenHi < 0 || lenHi > m.maxLen) {
			re, _ := syntax.Parse(content, syntax.Perl)
			if b, ok := capPattern(re, true, m.minLen, maxOr(m.maxLen)); ok {
				content = b.String() // formats need no JSON escapes
				lenLo, lenHi = lengths(b)
			}
		}
	}
	if len(m.patterns) == 1 {
		lenLo, lenHi = patternLengths(m.patterns[0])
		var re string
		var err error
		if lenLo < m.minLen || m.maxLen >= 0 && (lenHi < 0 || lenHi > m.maxLen) {
			if b, ok := boundPattern(m.patterns[0], m.minLen, m.maxLen); ok {
				re = encodeParsed(b)
				lenLo, lenHi = m.minLen, m.maxLen
			} else if b, anchored, ok := parsePattern(m.patterns[0]); ok {
				// A subset: repeats capped so every string fits.
				if b, ok := capPattern(b, anchored, m.minLen, maxOr(m.maxLen)); ok {
					re = encodeRegexp(b).String()
					lenLo, lenHi = lengths(b)
				}
			}
		}
		if re == "" {
			re, err = encodePattern(m.patterns[0])
		}
		if err != nil {
			unsupported("pattern", m.at+": "+err.Error())
		}
		content = re
	}
	if content != "" {
		// Length bounds must be implied by the content regex (no intersection in regexes).
		if lenLo < m.minLen || m.maxLen >= 0 && (lenHi < 0 || lenHi > m.maxLen) {
			unsupported("maxLength", m.at+" (with a pattern or format)")
		}
		return Seq(Lit(`"`), Re(content), Lit(`"`))
	}
	if m.minLen == 0 && m.maxLen < 0 {
		return Re(stringRe)
	}
	if m.maxLen > maxRegexN || m.minLen > maxRegexN {
		// Go caps regex repeat counts: count characters in the grammar instead.
		return Seq(Lit(`"`), Rep(Re(jsonChar), m.minLen, m.maxLen), Lit(`"`))
	}
	return Re(`"` + jsonChar + `{` + itoa(m.minLen) + `,` + optItoa(m.maxLen) + `}"`)
}

func optItoa(n int) string {
	if n < 0 {
		return ""
	}
	return itoa(n)
}

// ecmaRegexp compiles an ECMAScript pattern for searching decoded strings.
func ecmaRegexp(p string) (*regexp.Regexp, error) {
	g, err := ecmaToGo(p)
	if err != nil {
		return nil, err
	}
	return regexp.Compile(g)
}

const ecmaSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

// ecmaToGo rewrites an ECMAScript pattern (no flags) as Go syntax with the same meaning,
// or fails on what Go cannot express (lookaround, backreferences).
func ecmaToGo(p string) (string, error) {
	var b strings.Builder
	inClass := false
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\':
			if i+1 >= len(rs) {
				return "", errf("trailing backslash")
			}
			i++
			e := rs[i]
			switch {
			case e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 'b' && !inClass || e == 'B':
				b.WriteRune('\\')
				b.WriteRune(e)
			case e == 'b': // backspace in a class
				b.WriteString(`\x08`)
			case e == 's':
				if inClass {
					b.WriteString(ecmaSpace)
				} else {
					b.WriteString("[" + ecmaSpace + "]")
				}
			case e == 'S':
				if inClass {
					return "", errf(`\S inside a class`)
				}
				b.WriteString("[^" + ecmaSpace + "]")
			case e == 'u':
				if i+4 < len(rs) && isHex(rs[i+1:i+5]) {
					b.WriteString(`\x{` + string(rs[i+1:i+5]) + `}`)
					i += 4
				} else {
					return "", errf(`bad \u escape`)
				}
			case e == 'x':
				if i+2 < len(rs) && isHex(rs[i+1:i+3]) {
					b.WriteString(`\x{` + string(rs[i+1:i+3]) + `}`)
					i += 2
				} else {
					return "", errf(`bad \x escape`)
				}
			case e == 'n' || e == 'r' || e == 't' || e == 'f' || e == 'v':
				b.WriteString(`\` + string(e))
			case e == '0' && (i+1 >= len(rs) || rs[i+1] < '0' || rs[i+1] > '9'):
				b.WriteString(`\x00`)
			case e >= '0' && e <= '9', e == 'k', e == 'c', e == 'p', e == 'P':
				return "", errf(`unsupported escape \` + string(e))
			case e < 0x80 && !isAlnum(e):
				b.WriteString(regexp.QuoteMeta(string(e)))
				if strings.ContainsRune(`-]`, e) && !inClass {
					// QuoteMeta handles these; nothing more to do.
				}
			default:
				return "", errf(`unsupported escape \` + string(e))
			}
		case inClass:
			if r == ']' {
				inClass = false
			} else if r == '[' {
				b.WriteString(`\[`)
				continue
			}
			b.WriteRune(r)
		case r == '[':
			inClass = true
			b.WriteRune(r)
			if i+1 < len(rs) && rs[i+1] == '^' {
				b.WriteRune('^')
				i++
			}
			if i+1 < len(rs) && rs[i+1] == ']' {
				return "", errf("empty class")
			}
		case r == '.':
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		case r == '(' && i+2 < len(rs) && rs[i+1] == '?':
			switch {
			case rs[i+2] == ':':
				b.WriteString("(?:")
				i += 2
			case rs[i+2] == '<' && i+3 < len(rs) && rs[i+3] != '=' && rs[i+3] != '!':
				b.WriteString("(?P<")
				i += 2
			default:
				return "", errf("lookaround")
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}

func isHex(rs []rune) bool {
	for _, r := range rs {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func isAlnum(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
}

type patErr string

func (e patErr) Error() string { return string(e) }

func errf(s string) error { return patErr(s) }

// encodePattern turns an ECMAScript pattern into a regex over the JSON string's content
// (between the quotes) such that the content matches iff its decoded text contains a match:
// each character the pattern reads is written raw or, if JSON requires, as its canonical
// escape; text around the match is any JSON characters.
func encodePattern(p string) (string, error) {
	g, err := ecmaToGo(p)
	if err != nil {
		return "", err
	}
	re, err := syntax.Parse(g, syntax.Perl)
	if err != nil {
		return "", err
	}
	return encodeParsed(re), nil
}

func encodeParsed(re *syntax.Regexp) string {
	return jsonChar + `*?(?:` + encodeRegexp(re).String() + `)` + jsonChar + `*`
}

// encodeRegexp rewrites every character a regexp reads as its JSON string encodings.
func encodeRegexp(re *syntax.Regexp) *syntax.Regexp {
	switch re.Op {
	case syntax.OpLiteral:
		var subs []*syntax.Regexp
		for _, r := range re.Rune {
			set := []rune{r, r}
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicodeFold(r); f != r; f = unicodeFold(f) {
					set = append(set, f, f)
				}
			}
			subs = append(subs, encodeClass(set))
		}
		if len(subs) == 1 {
			return subs[0]
		}
		return &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
	case syntax.OpCharClass:
		return encodeClass(re.Rune)
	case syntax.OpAnyChar:
		return encodeClass([]rune{0, 0x10ffff})
	case syntax.OpAnyCharNotNL:
		return encodeClass([]rune{0, 9, 11, 0x10ffff})
	}
	out := *re
	out.Sub = nil
	for _, s := range re.Sub {
		out.Sub = append(out.Sub, encodeRegexp(s))
	}
	out.Sub0 = [1]*syntax.Regexp{}
	return &out
}

// encodeClass: the characters in ranges, raw where JSON allows, else as canonical escapes.
func encodeClass(ranges []rune) *syntax.Regexp {
	var raw []rune
	var alts []*syntax.Regexp
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for r := lo; r <= hi && r < 0x20; r++ {
			alts = append(alts, literal(jsonString(string(r))[1:len(jsonString(string(r)))-1]))
		}
		lo = max(lo, 0x20)
		for _, bad := range []rune{'"', '\\'} {
			if lo <= bad && bad <= hi {
				alts = append(alts, literal(`\`+string(bad)))
				if lo < bad {
					raw = append(raw, lo, bad-1)
				}
				lo = bad + 1
			}
		}
		if lo <= hi {
			raw = append(raw, lo, hi)
		}
	}
	if len(raw) > 0 {
		alts = append([]*syntax.Regexp{{Op: syntax.OpCharClass, Rune: raw}}, alts...)
	}
	switch len(alts) {
	case 0:
		return &syntax.Regexp{Op: syntax.OpNoMatch}
	case 1:
		return alts[0]
	}
	return &syntax.Regexp{Op: syntax.OpAlternate, Sub: alts}
}

func literal(s string) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune(s)}
}

func maxOr(n int) int {
	if n < 0 {
		return 1 << 30
	}
	return n
}

// parsePattern parses an ECMAScript pattern as Go syntax; anchored means it can only match
// the whole string (it starts with ^ and ends with $).
func parsePattern(p string) (*syntax.Regexp, bool, bool) {
	g, err := ecmaToGo(p)
	if err != nil {
		return nil, false, false
	}
	re, err := syntax.Parse(g, syntax.Perl)
	if err != nil {
		return nil, false, false
	}
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	n := len(re.Sub)
	anchored := re.Op == syntax.OpConcat && n >= 2 && re.Sub[0].Op == syntax.OpBeginText && re.Sub[n-1].Op == syntax.OpEndText
	return re, anchored, true
}
