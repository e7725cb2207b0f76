// This file implements filters (`x | name(args)` and {% filter %} blocks). Dispatch follows the
// reference by operand type; filters the reference lacks (select, reject, map('filter'), count,
// min, max, sum, round, wordcount, batch, d, bare `default`) are added with Jinja's meaning.
package chattmpl

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

func (in *interp) applyFilter(f *filterNode, v any, e *env) (any, error) {
	var args []any
	var kw *Map
	if f.hasCall {
		var err error
		args, kw, err = in.evalArgs(f.args, e)
		if err != nil {
			return nil, err
		}
	}
	r, err := in.filter(f.name, v, args, kw, e)
	if err != nil {
		return nil, in.locate(f, err)
	}
	return r, nil
}

// arg returns positional i, else keyword name, else def.
func arg(args []any, kw *Map, i int, name string, def any) any {
	if i >= 0 && i < len(args) {
		return args[i]
	}
	if v, ok := kw.Get(name); ok {
		return v
	}
	return def
}

func (in *interp) filter(name string, v any, args []any, kw *Map, e *env) (any, error) {
	switch name {
	case "safe":
		return v, nil
	case "tojson":
		return tojsonFilter(v, kw)
	case "default", "d":
		def := arg(args, nil, 0, "", "")
		boolean, ok := arg(args, kw, 1, "boolean", false).(bool)
		if !ok {
			return nil, errors.New("`default` filter flag must be a boolean")
		}
		if _, u := v.(undefined); u || (boolean && !truthy(v)) {
			return def, nil
		}
		return v, nil
	case "select", "reject", "selectattr", "rejectattr", "map":
		return in.selectFilter(name, v, args, kw, e)
	case "count":
		name = "length"
	case "items":
		if v == nil {
			return newList(nil), nil
		}
	}
	switch x := v.(type) {
	case *list:
		return listFilter(name, x, args, kw)
	case string:
		return stringFilter(name, x, args, kw)
	case int64, float64:
		switch name {
		case "abs":
			if i, ok := x.(int64); ok {
				if i < 0 {
					return -i, nil
				}
				return i, nil
			}
			return math.Abs(x.(float64)), nil
		case "int":
			if f, ok := x.(float64); ok {
				return intOrFloat(math.Floor(f)), nil
			}
			return x, nil
		case "float":
			return toFloat(x), nil
		case "string":
			return toString(x), nil
		case "round":
			return roundFilter(toFloat(x), args, kw)
		}
	case bool:
		switch name {
		case "bool":
			return x, nil
		case "int":
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		case "float":
			if x {
				return 1.0, nil
			}
			return 0.0, nil
		case "string":
			return toString(x), nil
		}
	case *Map:
		switch name {
		case "items":
			return dictItems(x), nil
		case "length":
			return int64(x.Len()), nil
		case "list":
			return dictMethod(x, "keys").(*callable).fn(in, nil, nil, e)
		}
		if m := dictMethod(x, name); m != nil {
			return m.(*callable).fn(in, args, kw, e)
		}
		return nil, errors.New("Unknown ObjectValue filter: " + name)
	}
	return nil, errors.New("Cannot apply filter \"" + name + "\" to type: " + typeName(v))
}

func tojsonFilter(v any, kw *Map) (any, error) {
	o := jsonOpts{}
	switch i := arg(nil, kw, -1, "indent", nil).(type) {
	case nil:
	case int64:
		o.indent = int(min(max(i, 0), 64))
	default:
		return nil, errors.New("If set, indent must be a number")
	}
	var ok bool
	if o.ensureASCII, ok = arg(nil, kw, -1, "ensure_ascii", false).(bool); !ok {
		return nil, errors.New("If set, ensure_ascii must be a boolean")
	}
	if o.sortKeys, ok = arg(nil, kw, -1, "sort_keys", false).(bool); !ok {
		return nil, errors.New("If set, sort_keys must be a boolean")
	}
	switch s := arg(nil, kw, -1, "separators", nil).(type) {
	case nil:
	case *list:
		if len(s.items) != 2 {
			return nil, errors.New("separators must be a tuple of two strings")
		}
		a, ok1 := s.items[0].(string)
		b, ok2 := s.items[1].(string)
		if !ok1 || !ok2 {
			return nil, errors.New("separators must be a tuple of two strings")
		}
		o.seps = &[2]string{a, b}
	default:
		return nil, errors.New("If set, separators must be a tuple of two strings")
	}
	return toJSON(v, o, 0)
}

// joinPart is how the reference's join prints an element (JavaScript Array.join of raw values).
func joinPart(v any) string {
	switch v.(type) {
	case nil, undefined:
		return ""
	}
	return primitiveString(v)
}

func listFilter(name string, l *list, args []any, kw *Map) (any, error) {
	switch name {
	case "list":
		return l, nil
	case "first", "last":
		if len(l.items) == 0 {
			return undefined{}, nil
		}
		if name == "first" {
			return l.items[0], nil
		}
		return l.items[len(l.items)-1], nil
	case "length":
		return int64(len(l.items)), nil
	case "reverse":
		out := make([]any, len(l.items))
		for i, it := range l.items {
			out[len(out)-1-i] = it
		}
		return newList(out), nil
	case "sort":
		reverse, ok1 := arg(args, kw, 0, "reverse", false).(bool)
		cs, ok2 := arg(args, kw, 1, "case_sensitive", false).(bool)
		if !ok1 || !ok2 {
			return nil, errors.New("reverse and case_sensitive must be booleans")
		}
		attr := arg(args, kw, 2, "attribute", nil)
		key := func(v any) any { return v }
		switch a := attr.(type) {
		case nil:
		case string, int64:
			path := toString(a)
			key = func(v any) any { return attrPath(v, path) }
		default:
			return nil, errors.New("attribute must be a string, integer, or null")
		}
		return sortValues(l.items, key, cs, reverse)
	case "join":
		sep, ok := arg(args, kw, 0, "separator", "").(string)
		if !ok {
			return nil, errors.New("separator must be a string")
		}
		parts := make([]string, len(l.items))
		for i, it := range l.items {
			parts[i] = joinPart(it)
		}
		return strings.Join(parts, sep), nil
	case "string":
		return toString(l), nil
	case "unique":
		var out []any
		for _, it := range l.items {
			dup := false
			for _, o := range out {
				if strictEqual(o, it) {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, it)
			}
		}
		return newList(out), nil
	case "min", "max":
		if len(l.items) == 0 {
			return undefined{}, nil
		}
		s, err := sortValues(l.items, func(v any) any { return v }, false, name == "max")
		if err != nil {
			return nil, err
		}
		return s.(*list).items[0], nil
	case "sum":
		var total any = arg(args, kw, 1, "start", int64(0))
		for _, it := range l.items {
			if a, ok := arg(args, kw, 0, "attribute", nil).(string); ok {
				it = attrPath(it, a)
			}
			var err error
			if total, err = binaryOp("+", total, it); err != nil {
				return nil, err
			}
		}
		return total, nil
	case "batch":
		n, ok := arg(args, kw, 0, "linecount", nil).(int64)
		if !ok || n <= 0 {
			return nil, errors.New("batch needs a positive integer size")
		}
		fill := arg(args, kw, 1, "fill_with", undefined{})
		var out []any
		for i := 0; i < len(l.items); i += int(n) {
			chunk := append([]any{}, l.items[i:min(len(l.items), i+int(n))]...)
			if _, u := fill.(undefined); !u {
				for len(chunk) < int(n) {
					chunk = append(chunk, fill)
				}
			}
			out = append(out, newList(chunk))
		}
		return newList(out), nil
	}
	return nil, errors.New("Unknown ArrayValue filter: " + name)
}

func stringFilter(name, s string, args []any, kw *Map) (any, error) {
	switch name {
	case "length":
		return int64(jsLen(s)), nil
	case "upper":
		return jsUpper(s), nil
	case "lower":
		return jsLower(s), nil
	case "title":
		return titleCase(s), nil
	case "capitalize":
		return capitalize(s), nil
	case "trim":
		return strings.TrimFunc(s, isJSSpace), nil
	case "string", "safe":
		return s, nil
	case "join":
		sep, ok := arg(args, kw, 0, "separator", "").(string)
		if !ok {
			return nil, errors.New("separator must be a string")
		}
		parts := make([]string, 0, len(s))
		for _, r := range s {
			parts = append(parts, string(r))
		}
		return strings.Join(parts, sep), nil
	case "list":
		var out []any
		for _, r := range s {
			out = append(out, string(r))
		}
		return newList(out), nil
	case "int", "float":
		return parseNumber(name, s, args, kw), nil
	case "indent":
		width, ok := arg(args, kw, 0, "width", int64(4)).(int64)
		if !ok {
			return nil, errors.New("width must be a number")
		}
		first := truthy(arg(args, kw, 1, "first", false))
		blank := truthy(arg(args, kw, 2, "blank", false))
		ind := strings.Repeat(" ", int(min(max(width, 0), 1000)))
		lines := strings.Split(s, "\n")
		for i, ln := range lines {
			if (!first && i == 0) || (!blank && ln == "") {
				continue
			}
			lines[i] = ind + ln
		}
		return strings.Join(lines, "\n"), nil
	case "replace":
		return replaceString(s, args, kw)
	case "wordcount":
		return int64(len(strings.FieldsFunc(s, isJSSpace))), nil
	case "reverse":
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	case "first", "last":
		r := []rune(s)
		if len(r) == 0 {
			return undefined{}, nil
		}
		if name == "first" {
			return string(r[0]), nil
		}
		return string(r[len(r)-1]), nil
	}
	return nil, errors.New("Unknown StringValue filter: " + name)
}

// parseNumber is the int/float filter on a string: JavaScript parseInt/parseFloat of the
// leading number, or the default when there is none.
func parseNumber(name, s string, args []any, kw *Map) any {
	var def any = int64(0)
	if name == "float" {
		def = 0.0
	}
	def = arg(args, kw, 0, "default", def)
	t := strings.TrimLeftFunc(s, isJSSpace)
	end := 0
	if end < len(t) && (t[end] == '+' || t[end] == '-') {
		end++
	}
	digits := end
	for end < len(t) && isDigit(t[end]) {
		end++
	}
	if name == "int" {
		if end == digits {
			return def
		}
		n, err := strconv.ParseInt(t[:end], 10, 64)
		if err != nil {
			return def
		}
		return n
	}
	if end < len(t) && t[end] == '.' {
		end++
		for end < len(t) && isDigit(t[end]) {
			end++
		}
	}
	if end > digits && end < len(t) && (t[end] == 'e' || t[end] == 'E') {
		k := end + 1
		if k < len(t) && (t[k] == '+' || t[k] == '-') {
			k++
		}
		if k < len(t) && isDigit(t[k]) {
			for k < len(t) && isDigit(t[k]) {
				k++
			}
			end = k
		}
	}
	f, err := strconv.ParseFloat(t[:end], 64)
	if err != nil {
		if strings.HasPrefix(t[digits:], "Infinity") {
			return math.Inf(map[bool]int{true: -1, false: 1}[strings.HasPrefix(t, "-")])
		}
		return def
	}
	return f
}

func roundFilter(f float64, args []any, kw *Map) (any, error) {
	prec, ok := arg(args, kw, 0, "precision", int64(0)).(int64)
	if !ok {
		return nil, errors.New("round precision must be an integer")
	}
	method, _ := arg(args, kw, 1, "method", "common").(string)
	p := math.Pow(10, float64(prec))
	switch method {
	case "ceil":
		return math.Ceil(f*p) / p, nil
	case "floor":
		return math.Floor(f*p) / p, nil
	}
	return math.Round(f*p) / p, nil
}
