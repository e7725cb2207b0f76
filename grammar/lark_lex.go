// This file splits a Lark grammar into tokens: names, strings ("lit", "lit"i), regexes
// (/re/flags), numbers, directives (%import), punctuation and line breaks; `//` and `#`
// comments are dropped.

package grammar

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

type larkTokKind uint8

const (
	ltEOF larkTokKind = iota
	ltNL
	ltName
	ltString    // text = decoded value; flags = "i" or ""
	ltRegex     // text = pattern as written; flags = the letters after the closing /
	ltNumber    // text = digits
	ltDirective // text = name without %
	ltPunct     // text = one of : | ( ) [ ] ? * + ~ .. . -> ! { } , -
	ltJSON      // text = a JSON object after %json or %llguidance
)

type larkTok struct {
	kind  larkTokKind
	text  string
	flags string
	pos   int
}

func larkLex(src string) ([]larkTok, error) {
	var toks []larkTok
	errAt := func(pos int, msg string, args ...any) error { return syntaxErr("lark", src, pos, msg, args...) }
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\n':
			if len(toks) == 0 || toks[len(toks)-1].kind != ltNL {
				toks = append(toks, larkTok{kind: ltNL, pos: i})
			}
			i++
		case isNameStart(c):
			s := i
			for i < len(src) && (isNameStart(src[i]) || '0' <= src[i] && src[i] <= '9') {
				i++
			}
			toks = append(toks, larkTok{kind: ltName, text: src[s:i], pos: s})
		case '0' <= c && c <= '9':
			s := i
			for i < len(src) && '0' <= src[i] && src[i] <= '9' {
				i++
			}
			toks = append(toks, larkTok{kind: ltNumber, text: src[s:i], pos: s})
		case c == '%':
			s := i
			i++
			for i < len(src) && isNameStart(src[i]) {
				i++
			}
			if i == s+1 {
				return nil, errAt(s, "expected a directive name after %%")
			}
			toks = append(toks, larkTok{kind: ltDirective, text: src[s+1 : i], pos: s})
			if name := src[s+1 : i]; name == "json" || name == "llguidance" {
				for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
					i++
				}
				n, err := jsonObjectLen(src[i:])
				if err != nil {
					return nil, errAt(i, "%%%s needs a JSON object after it: %v", name, err)
				}
				toks = append(toks, larkTok{kind: ltJSON, text: src[i : i+n], pos: i})
				i += n
			}
		case c == '"':
			t, n, err := larkString(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i += n
		case c == '/':
			s := i
			i++
			for {
				if i >= len(src) || src[i] == '\n' {
					return nil, errAt(s, "unterminated regex (no closing / on the line)")
				}
				if src[i] == '\\' && i+1 < len(src) && src[i+1] != '\n' {
					i += 2
					continue
				}
				if src[i] == '/' {
					break
				}
				i++
			}
			pat := src[s+1 : i]
			i++
			f := i
			for i < len(src) && strings.IndexByte("imslux", src[i]) >= 0 {
				i++
			}
			toks = append(toks, larkTok{kind: ltRegex, text: pat, flags: src[f:i], pos: s})
		case c == '.' && i+1 < len(src) && src[i+1] == '.':
			toks = append(toks, larkTok{kind: ltPunct, text: "..", pos: i})
			i += 2
		case c == '-' && i+1 < len(src) && src[i+1] == '>':
			toks = append(toks, larkTok{kind: ltPunct, text: "->", pos: i})
			i += 2
		case strings.IndexByte(":|()[]?*+~.!{},-", c) >= 0:
			toks = append(toks, larkTok{kind: ltPunct, text: src[i : i+1], pos: i})
			i++
		case c == '<':
			return nil, errAt(i, "special tokens (<...>) are not supported; write the text as a string")
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, errAt(i, "unexpected %q", r)
		}
	}
	return append(toks, larkTok{kind: ltEOF, pos: len(src)}), nil
}

// jsonObjectLen is the length of the JSON object s starts with.
func jsonObjectLen(s string) (int, error) {
	if !strings.HasPrefix(s, "{") {
		return 0, fmt.Errorf("no {")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return 0, err
	}
	return int(dec.InputOffset()), nil
}

func isNameStart(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

// larkString reads the string literal at src[at] == '"', decoding escapes as Python does
// (an unknown escape keeps its backslash), and an i flag right after it.
func larkString(src string, at int) (larkTok, int, error) {
	var buf []byte
	i := at + 1
	for {
		if i >= len(src) || src[i] == '\n' {
			return larkTok{}, 0, syntaxErr("lark", src, at, "unterminated string (no closing \" on the line)")
		}
		c := src[i]
		if c == '"' {
			i++
			break
		}
		if c == '\\' {
			r, n, msg := readEscape(src[i:])
			switch {
			case msg == "":
				buf = utf8.AppendRune(buf, r)
				i += n
			case strings.HasPrefix(msg, "unknown escape"):
				buf = append(buf, '\\')
				i++
			default:
				return larkTok{}, 0, syntaxErr("lark", src, i, "%s", msg)
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && n == 1 {
			return larkTok{}, 0, syntaxErr("lark", src, i, "invalid UTF-8")
		}
		buf = append(buf, src[i:i+n]...)
		i += n
	}
	t := larkTok{kind: ltString, text: string(buf), pos: at}
	if i < len(src) && src[i] == 'i' && (i+1 >= len(src) || !isNameStart(src[i+1]) && !('0' <= src[i+1] && src[i+1] <= '9')) {
		t.flags = "i"
		i++
	}
	return t, i - at, nil
}
