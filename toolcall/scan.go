// A JSON scanner for text that may stop anywhere: it checks the syntax of a prefix of a JSON
// value and reports where it ended, so the streaming parsers can tell a call that is still
// being written from one that is broken, and where the arguments value of a call begins.

package toolcall

import (
	"encoding/json"
	"strings"
)

// scanStatus is what a scan found.
type scanStatus uint8

const (
	scanPartial  scanStatus = iota // valid so far; the text ended inside the value
	scanComplete                   // a whole value; end is where it stops
	scanInvalid                    // not JSON
)

// scanner is a recursive-descent JSON checker over s. It stops at the first error or at the
// end of s (eof), whichever comes first.
type scanner struct {
	s   string
	i   int
	eof bool // ran out of text (the value may go on)
	bad bool // a syntax error
}

func (sc *scanner) stop() bool { return sc.eof || sc.bad }

func (sc *scanner) ws() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 and sets eof at the end.
func (sc *scanner) peek() byte {
	if sc.i >= len(sc.s) {
		sc.eof = true
		return 0
	}
	return sc.s[sc.i]
}

func (sc *scanner) value() {
	sc.ws()
	switch c := sc.peek(); {
	case sc.eof:
	case c == '{':
		sc.object(nil)
	case c == '[':
		sc.array()
	case c == '"':
		sc.str()
	case c == '-' || (c >= '0' && c <= '9'):
		sc.number()
	case c == 't':
		sc.word("true")
	case c == 'f':
		sc.word("false")
	case c == 'n':
		sc.word("null")
	default:
		sc.bad = true
	}
}

func (sc *scanner) word(w string) {
	rest := sc.s[sc.i:]
	if len(rest) < len(w) {
		if strings.HasPrefix(w, rest) {
			sc.i, sc.eof = len(sc.s), true
		} else {
			sc.bad = true
		}
		return
	}
	if rest[:len(w)] != w {
		sc.bad = true
		return
	}
	sc.i += len(w)
}

// number accepts JSON's number syntax; a number at the very end of the text may go on.
func (sc *scanner) number() {
	start := sc.i
	for sc.i < len(sc.s) && strings.IndexByte("+-0123456789.eE", sc.s[sc.i]) >= 0 {
		sc.i++
	}
	if sc.i == len(sc.s) {
		sc.eof = true
		return
	}
	var f float64
	if json.Unmarshal([]byte(sc.s[start:sc.i]), &f) != nil {
		sc.bad = true
	}
}

func (sc *scanner) str() {
	sc.i++ // the opening quote
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case c == '"':
			sc.i++
			return
		case c == '\\':
			if sc.i+1 >= len(sc.s) {
				sc.i, sc.eof = len(sc.s), true
				return
			}
			e := sc.s[sc.i+1]
			if e == 'u' {
				for k := 2; k < 6; k++ {
					if sc.i+k >= len(sc.s) {
						sc.i, sc.eof = len(sc.s), true
						return
					}
					if !isHex(sc.s[sc.i+k]) {
						sc.bad = true
						return
					}
				}
				sc.i += 6
				continue
			}
			if strings.IndexByte(`"\/bfnrt`, e) < 0 {
				sc.bad = true
				return
			}
			sc.i += 2
		case c < 0x20:
			sc.bad = true
			return
		default:
			sc.i++
		}
	}
	sc.eof = true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (sc *scanner) array() {
	sc.i++
	sc.ws()
	if sc.peek() == ']' {
		sc.i++
		return
	}
	for !sc.stop() {
		sc.value()
		if sc.stop() {
			return
		}
		sc.ws()
		switch sc.peek() {
		case ',':
			sc.i++
		case ']':
			sc.i++
			return
		default:
			if !sc.eof {
				sc.bad = true
			}
			return
		}
	}
}

// object scans an object; member, if set, is told each key and scans its value itself.
func (sc *scanner) object(member func(key string)) {
	sc.i++
	sc.ws()
	if sc.peek() == '}' {
		sc.i++
		return
	}
	for !sc.stop() {
		sc.ws()
		if c := sc.peek(); sc.eof || c != '"' {
			sc.bad = !sc.eof
			return
		}
		ks := sc.i
		sc.str()
		if sc.stop() {
			return
		}
		var key string
		json.Unmarshal([]byte(sc.s[ks:sc.i]), &key)
		sc.ws()
		if c := sc.peek(); sc.eof || c != ':' {
			sc.bad = !sc.eof
			return
		}
		sc.i++
		if member != nil {
			member(key)
		} else {
			sc.value()
		}
		if sc.stop() {
			return
		}
		sc.ws()
		switch sc.peek() {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return
		default:
			if !sc.eof {
				sc.bad = true
			}
			return
		}
	}
}

func (sc *scanner) status() scanStatus {
	switch {
	case sc.bad:
		return scanInvalid
	case sc.eof:
		return scanPartial
	}
	return scanComplete
}

// scanValue scans one JSON value at the start of s (after optional whitespace).
func scanValue(s string) (st scanStatus, start, end int) {
	sc := &scanner{s: s}
	sc.ws()
	start = sc.i
	sc.value()
	return sc.status(), start, sc.i
}

// callScan is what scanCall found in a call object {"name": ..., "arguments": ...}.
type callScan struct {
	status    scanStatus
	end       int    // where the object ended (complete) or the scan stopped
	name      string // the "name" value, once its string is complete
	hasName   bool
	argsStart int  // where the arguments value starts (-1: not reached)
	argsEnd   int  // where it ends, or the end of the text while it is being written
	argsDone  bool // the arguments value is complete
}

// scanCall scans a call object at the start of s (after optional whitespace). argKeys are the
// keys that hold the arguments ("arguments", and "parameters" for Llama 3).
func scanCall(s string, argKeys ...string) callScan {
	sc := &scanner{s: s}
	cs := callScan{argsStart: -1}
	sc.ws()
	if c := sc.peek(); sc.eof || c != '{' {
		sc.bad = !sc.eof
		cs.status = sc.status()
		return cs
	}
	sc.object(func(key string) {
		sc.ws()
		switch {
		case key == "name":
			if c := sc.peek(); sc.eof || c != '"' {
				sc.bad = !sc.eof
				return
			}
			ks := sc.i
			sc.str()
			if !sc.stop() && json.Unmarshal([]byte(sc.s[ks:sc.i]), &cs.name) == nil {
				cs.hasName = true
			}
		case containsStr(argKeys, key) && cs.argsStart < 0:
			if sc.i >= len(sc.s) {
				sc.eof = true
				return
			}
			cs.argsStart = sc.i
			sc.value()
			cs.argsEnd = sc.i
			cs.argsDone = !sc.stop()
		default:
			sc.value()
		}
	})
	if cs.argsStart >= 0 && !cs.argsDone && sc.eof && !sc.bad {
		cs.argsEnd = len(s)
	}
	cs.status, cs.end = sc.status(), sc.i
	return cs
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
