// This file implements the global functions: raise_exception, range, namespace and strftime_now.
package chattmpl

import (
	"errors"
	"strings"
	"time"
)

// RaiseError is returned by Render when the template calls raise_exception(msg).
type RaiseError struct{ Msg string }

func (e *RaiseError) Error() string { return e.Msg }

func globals(now func() time.Time) map[string]any {
	return map[string]any{
		"true": true, "false": false, "none": nil,
		"True": true, "False": false, "None": nil,
		"raise_exception": method("raise_exception", func(args []any, _ *Map) (any, error) {
			msg := "undefined"
			if len(args) > 0 {
				msg = primitiveString(args[0])
			}
			return nil, &RaiseError{Msg: msg}
		}),
		"range": method("range", rangeFn),
		"strftime_now": method("strftime_now", func(args []any, _ *Map) (any, error) {
			f, ok := firstArg(args).(string)
			if !ok {
				return nil, errors.New("strftime_now expects a format string")
			}
			return strftime(now(), f), nil
		}),
		"namespace": method("namespace", namespaceFn),
	}
}

func firstArg(args []any) any {
	if len(args) == 0 {
		return undefined{}
	}
	return args[0]
}

func rangeFn(args []any, _ *Map) (any, error) {
	var ints []int64
	for _, a := range args {
		i, ok := a.(int64)
		if !ok {
			return nil, errors.New("range() arguments must be integers")
		}
		ints = append(ints, i)
	}
	start, stop, step := int64(0), int64(0), int64(1)
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, errors.New("range() expects 1 to 3 arguments")
	}
	if step == 0 {
		return nil, errors.New("range() step must not be zero")
	}
	var out []any
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(out) >= 100000 {
			return nil, errors.New("range() too large")
		}
		out = append(out, i)
	}
	return newList(out), nil
}

func namespaceFn(args []any, kw *Map) (any, error) {
	m := NewMap()
	if len(args) > 1 {
		return nil, errors.New(sprintf("namespace expected at most 1 argument, got %d", len(args)))
	}
	if len(args) == 1 {
		switch src := args[0].(type) {
		case *Map:
			for _, k := range src.Keys {
				m.Set(k, src.Values[k])
			}
		case *list:
			for _, p := range src.items {
				pl, ok := p.(*list)
				if !ok || len(pl.items) != 2 {
					return nil, errors.New("namespace expected an object or an iterable of [key, value] pairs")
				}
				k, ok := pl.items[0].(string)
				if !ok {
					return nil, errors.New("namespace keys must be strings")
				}
				m.Set(k, pl.items[1])
			}
		default:
			return nil, errors.New("'" + typeName(src) + "' object is not iterable")
		}
	}
	if kw != nil {
		for _, k := range kw.Keys {
			m.Set(k, kw.Values[k])
		}
	}
	return &namespace{m: m}, nil
}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// strftime supports the directives the reference does: %Y %m %d %b %B %H %M %%.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		switch f[i+1] {
		case 'Y':
			b.WriteString(sprintf("%d", t.Year()))
		case 'm':
			b.WriteString(sprintf("%02d", int(t.Month())))
		case 'd':
			b.WriteString(sprintf("%02d", t.Day()))
		case 'b':
			b.WriteString(monthNames[t.Month()-1][:3])
		case 'B':
			b.WriteString(monthNames[t.Month()-1])
		case 'H':
			b.WriteString(sprintf("%02d", t.Hour()))
		case 'M':
			b.WriteString(sprintf("%02d", t.Minute()))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i+1])
		}
		i++
	}
	return b.String()
}
