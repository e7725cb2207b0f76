// This file implements built-in methods of strings and dicts, the `is` tests, and the global
// functions (range, namespace, raise_exception, strftime_now).
package chattmpl

import (
	"errors"
	"regexp"
	"strings"
)

func method(name string, f func(args []any, kw *Map) (any, error)) *callable {
	return &callable{name: name, fn: func(_ *interp, args []any, kw *Map, _ *env) (any, error) { return f(args, kw) }}
}

var titleRe = regexp.MustCompile(`\b\w`)

// jsUpper / jsLower follow JavaScript's full case mapping where Go's simple mapping differs.
func jsUpper(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "ß", "SS")) }
func jsLower(s string) string { return strings.ToLower(s) }

func titleCase(s string) string {
	return titleRe.ReplaceAllStringFunc(s, strings.ToUpper)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	u := []rune(s)
	return jsUpper(string(u[0])) + string(u[1:])
}

func stringMethod(s, name string) any {
	switch name {
	case "length":
		return int64(jsLen(s))
	case "upper":
		return method(name, func([]any, *Map) (any, error) { return jsUpper(s), nil })
	case "lower":
		return method(name, func([]any, *Map) (any, error) { return jsLower(s), nil })
	case "strip": // the reference ignores the chars argument and strips whitespace
		return method(name, func([]any, *Map) (any, error) { return strings.TrimFunc(s, isJSSpace), nil })
	case "lstrip":
		return method(name, func([]any, *Map) (any, error) { return strings.TrimLeftFunc(s, isJSSpace), nil })
	case "rstrip":
		return method(name, func([]any, *Map) (any, error) { return strings.TrimRightFunc(s, isJSSpace), nil })
	case "title":
		return method(name, func([]any, *Map) (any, error) { return titleCase(s), nil })
	case "capitalize":
		return method(name, func([]any, *Map) (any, error) { return capitalize(s), nil })
	case "startswith", "endswith":
		return method(name, func(args []any, _ *Map) (any, error) {
			if len(args) == 0 {
				return nil, errors.New(name + "() requires at least one argument")
			}
			test := strings.HasPrefix
			if name == "endswith" {
				test = strings.HasSuffix
			}
			switch p := args[0].(type) {
			case string:
				return test(s, p), nil
			case *list:
				for _, it := range p.items {
					ps, ok := it.(string)
					if !ok {
						return nil, errors.New(name + "() tuple elements must be strings")
					}
					if test(s, ps) {
						return true, nil
					}
				}
				return false, nil
			}
			return nil, errors.New(name + "() argument must be a string or tuple of strings")
		})
	case "split":
		return method(name, func(args []any, _ *Map) (any, error) { return splitString(s, args) })
	case "replace":
		return method(name, func(args []any, kw *Map) (any, error) { return replaceString(s, args, kw) })
	}
	return nil
}

// splitString is Python's str.split(sep=None, maxsplit=-1).
func splitString(s string, args []any) (any, error) {
	var sep any
	if len(args) > 0 {
		sep = args[0]
	}
	maxsplit := int64(-1)
	if len(args) > 1 {
		m, ok := args[1].(int64)
		if !ok {
			return nil, errors.New("maxsplit argument must be a number")
		}
		maxsplit = m
	}
	var parts []string
	switch sp := sep.(type) {
	case nil:
		text := strings.TrimLeftFunc(s, isJSSpace)
		for text != "" {
			if maxsplit != -1 && int64(len(parts)) >= maxsplit {
				parts = append(parts, text)
				break
			}
			i := strings.IndexFunc(text, isJSSpace)
			if i < 0 {
				parts = append(parts, text)
				break
			}
			parts = append(parts, text[:i])
			text = strings.TrimLeftFunc(text[i:], isJSSpace)
		}
	case string:
		if sp == "" {
			return nil, errors.New("empty separator")
		}
		if maxsplit < 0 {
			parts = strings.Split(s, sp)
		} else {
			parts = strings.SplitN(s, sp, int(maxsplit)+1)
		}
	default:
		return nil, errors.New("sep argument must be a string or null")
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return newList(out), nil
}

func replaceString(s string, args []any, kw *Map) (any, error) {
	if len(args) < 2 {
		return nil, errors.New("replace() requires at least two arguments")
	}
	old, ok1 := args[0].(string)
	nw, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, errors.New("replace() arguments must be strings")
	}
	var count any
	if len(args) > 2 {
		count = args[2]
	} else if c, ok := kw.Get("count"); ok {
		count = c
	}
	n := -1
	switch c := count.(type) {
	case nil:
	case int64:
		n = int(c)
		if n < 0 {
			n = -1
		}
	default:
		return nil, errors.New("replace() count argument must be a number or null")
	}
	return strings.Replace(s, old, nw, n), nil
}

func dictMethod(m *Map, name string) any {
	switch name {
	case "get":
		return method(name, func(args []any, _ *Map) (any, error) {
			if len(args) == 0 {
				return nil, errors.New("Object key must be a string: got UndefinedValue")
			}
			k, ok := args[0].(string)
			if !ok {
				return nil, errors.New("Object key must be a string: got " + typeName(args[0]))
			}
			if v, ok := m.Get(k); ok {
				return v, nil
			}
			if len(args) > 1 {
				return args[1], nil
			}
			return nil, nil
		})
	case "items":
		return method(name, func([]any, *Map) (any, error) { return dictItems(m), nil })
	case "keys":
		return method(name, func([]any, *Map) (any, error) {
			out := make([]any, len(m.Keys))
			for i, k := range m.Keys {
				out[i] = k
			}
			return newList(out), nil
		})
	case "values":
		return method(name, func([]any, *Map) (any, error) {
			out := make([]any, len(m.Keys))
			for i, k := range m.Keys {
				out[i] = m.Values[k]
			}
			return newList(out), nil
		})
	case "dictsort":
		return method(name, func(args []any, kw *Map) (any, error) { return dictsort(m, args, kw) })
	}
	return nil
}

func dictItems(m *Map) *list {
	out := make([]any, len(m.Keys))
	for i, k := range m.Keys {
		out[i] = newList([]any{k, m.Values[k]})
	}
	return newList(out)
}

// runTest evaluates `v is name(args...)`.
func runTest(name string, v any, args []any) (bool, error) {
	arg := func() any {
		if len(args) > 0 {
			return args[0]
		}
		return undefined{}
	}
	switch name {
	case "boolean":
		_, ok := v.(bool)
		return ok, nil
	case "callable":
		_, ok := v.(*callable)
		return ok, nil
	case "odd", "even":
		i, ok := v.(int64)
		if !ok {
			return false, errors.New("cannot " + name + " on " + typeName(v))
		}
		return (i%2 != 0) == (name == "odd"), nil
	case "false":
		return v == false, nil
	case "true":
		return v == true, nil
	case "none":
		return v == nil, nil
	case "string":
		_, ok := v.(string)
		return ok, nil
	case "number":
		return isNumber(v), nil
	case "integer":
		_, ok := v.(int64)
		return ok, nil
	case "float":
		_, ok := v.(float64)
		return ok, nil
	case "iterable":
		switch v.(type) {
		case *list, string:
			return true, nil
		}
		return false, nil
	case "mapping":
		_, ok := v.(*Map)
		return ok, nil
	case "sequence":
		switch v.(type) {
		case *list, string, *Map:
			return true, nil
		}
		return false, nil
	case "lower", "upper":
		s, ok := v.(string)
		if !ok {
			return false, nil
		}
		if name == "lower" {
			return s == jsLower(s), nil
		}
		return s == jsUpper(s), nil
	case "defined":
		_, u := v.(undefined)
		return !u, nil
	case "undefined":
		_, u := v.(undefined)
		return u, nil
	case "equalto", "eq", "==":
		return strictEqual(v, arg()), nil
	case "ne", "!=":
		return !strictEqual(v, arg()), nil
	case "sameas":
		return strictEqual(v, arg()), nil
	case "divisibleby":
		a, ok1 := v.(int64)
		b, ok2 := arg().(int64)
		if !ok1 || !ok2 || b == 0 {
			return false, errors.New("divisibleby needs nonzero integers")
		}
		return a%b == 0, nil
	case "gt", ">", "ge", ">=", "lt", "<", "le", "<=":
		op := map[string]string{"gt": ">", "ge": ">=", "lt": "<", "le": "<="}[name]
		if op == "" {
			op = name
		}
		r, err := binaryOp(op, v, arg())
		if err != nil {
			return false, err
		}
		return r == true, nil
	case "in":
		r, err := binaryOp("in", v, arg())
		if err != nil {
			return false, err
		}
		return r == true, nil
	}
	return false, errors.New("Unknown test: " + name)
}
