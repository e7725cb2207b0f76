// This file implements how values become text: the reference's toString (what {{ x }} prints),
// JavaScript number formatting, and the tojson serializer (Python json.dumps separators, key
// insertion order, non-ASCII kept unless ensure_ascii).
package chattmpl

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsNumber formats f like JavaScript's Number.prototype.toString.
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	a := math.Abs(f)
	if a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // like 1.5e-07 or 1e+21
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[:1]
	exp = strings.TrimLeft(exp[1:], "0")
	if exp == "" {
		exp = "0"
	}
	return mant + "e" + sign + exp
}

// floatString is the reference's FloatValue.toString: integral floats keep one decimal.
func floatString(f float64) string {
	if f == 0 && math.Signbit(f) {
		return "-0.0"
	}
	if !math.IsInf(f, 0) && !math.IsNaN(f) && f == math.Trunc(f) {
		if math.Abs(f) >= 1e21 {
			return jsNumber(f)
		}
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return jsNumber(f)
}

// toString is what a value prints as in template output ({{ x }}) and in string filters.
func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case undefined:
		return "undefined"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return floatString(x)
	case string:
		return x
	case *list, *Map, *namespace:
		s, _ := toJSON(x, jsonOpts{undefinedText: "undefined"}, 0)
		return s
	case *callable:
		return "[function " + x.name + "]"
	}
	return fmt.Sprint(v)
}

// primitiveString is JavaScript's String(v.value), used by `~`, `+` and join: numbers print
// without the float ".0", lists join their elements' toString with ",", dicts print
// "[object Map]" and none/undefined become "" inside lists when joined.
func primitiveString(v any) string {
	switch x := v.(type) {
	case float64:
		return jsNumber(x)
	case *list:
		parts := make([]string, len(x.items))
		for i, e := range x.items {
			switch e.(type) {
			case nil, undefined:
				parts[i] = toString(e)
			default:
				parts[i] = toString(e)
			}
		}
		return strings.Join(parts, ",")
	case *Map, *namespace:
		return "[object Map]"
	}
	return toString(v)
}

type jsonOpts struct {
	indent        int
	ensureASCII   bool
	sortKeys      bool
	seps          *[2]string
	undefinedText string // "null" for tojson, "undefined" for printing
}

// toJSON serializes like the reference's toJSON.
func toJSON(v any, o jsonOpts, depth int) (string, error) {
	itemSep, keySep := ", ", ": "
	if o.seps != nil {
		itemSep, keySep = o.seps[0], o.seps[1]
	} else if o.indent > 0 {
		itemSep = ","
	}
	switch x := v.(type) {
	case nil:
		return "null", nil
	case undefined:
		if o.undefinedText == "" {
			return "null", nil
		}
		return o.undefinedText, nil
	case bool:
		return toString(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "null", nil
		}
		return jsNumber(x), nil
	case string:
		return jsonString(x, o.ensureASCII), nil
	case *list, *Map, *namespace:
		ind := strings.Repeat(" ", o.indent)
		base := "\n" + strings.Repeat(ind, depth)
		child := base + ind
		if l, ok := x.(*list); ok {
			core := make([]string, len(l.items))
			for i, e := range l.items {
				s, err := toJSON(e, o, depth+1)
				if err != nil {
					return "", err
				}
				core[i] = s
			}
			if o.indent > 0 && len(core) > 0 {
				return "[" + child + strings.Join(core, itemSep+child) + base + "]", nil
			}
			return "[" + strings.Join(core, itemSep) + "]", nil
		}
		m, _ := x.(*Map)
		if ns, ok := x.(*namespace); ok {
			m = ns.m
		}
		keys := append([]string(nil), m.Keys...)
		if o.sortKeys {
			sort.SliceStable(keys, func(i, j int) bool { return keys[i] < keys[j] })
		}
		core := make([]string, len(keys))
		for i, k := range keys {
			s, err := toJSON(m.Values[k], o, depth+1)
			if err != nil {
				return "", err
			}
			e := jsonString(k, o.ensureASCII) + keySep + s
			if o.indent > 0 {
				e = child + e
			}
			core[i] = e
		}
		if o.indent > 0 && len(core) > 0 {
			return "{" + strings.Join(core, itemSep) + base + "}", nil
		}
		return "{" + strings.Join(core, itemSep) + "}", nil
	}
	return "", fmt.Errorf("Cannot convert to JSON: %s", typeName(v))
}

// jsonString quotes s like JSON.stringify (non-ASCII kept); ensureASCII escapes U+007F and above
// as \uXXXX UTF-16 units like the reference.
func jsonString(s string, ensureASCII bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case ensureASCII && r >= 0x7f:
			if r > 0xffff {
				h, l := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, h, l)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsLen is a string's length in UTF-16 code units (JavaScript's String.length).
func jsLen(s string) int {
	n := 0
	for _, r := range s {
		if r > 0xffff {
			n += 2
		} else {
			n++
		}
	}
	return n
}
