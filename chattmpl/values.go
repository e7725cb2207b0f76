// Package chattmpl renders Hugging Face chat templates (a Jinja subset) byte-identically to the
// reference renderer @huggingface/jinja, the one transformers.js uses.
//
// This file implements the runtime values: Map (ordered dict), lists, namespaces, functions and
// Undefined, plus conversion of caller-supplied Go values and JSON decoding with key order kept.
package chattmpl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// Map is an ordered dictionary: Keys in insertion order, Values by key.
type Map struct {
	Keys   []string
	Values map[string]any
}

// NewMap returns an empty Map.
func NewMap() *Map { return &Map{Values: map[string]any{}} }

// Set inserts or replaces key; a new key goes to the end.
func (m *Map) Set(key string, v any) {
	if m.Values == nil {
		m.Values = map[string]any{}
	}
	if _, ok := m.Values[key]; !ok {
		m.Keys = append(m.Keys, key)
	}
	m.Values[key] = v
}

// Get returns the value for key.
func (m *Map) Get(key string) (any, bool) {
	if m == nil {
		return nil, false
	}
	v, ok := m.Values[key]
	return v, ok
}

// Len is the number of entries.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.Keys)
}

// undefined is Jinja's Undefined: renders "", is falsy, `is defined` is false.
type undefined struct{}

// list is a runtime list (or tuple); a pointer so that == compares identity as the reference does.
type list struct {
	items []any
}

// namespace is the mutable object made by namespace().
type namespace struct {
	m *Map
}

// callable is a function value: a macro, caller, or built-in global.
type callable struct {
	name string
	fn   func(in *interp, args []any, kw *Map, callEnv *env) (any, error)
}

func newList(items []any) *list { return &list{items: items} }

// DecodeJSON parses JSON into chattmpl values: objects become *Map (key order kept), arrays
// []any, integral numbers int64, other numbers float64, null nil.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("chattmpl: trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("chattmpl: decode JSON: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := NewMap()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("chattmpl: decode JSON: %w", err)
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				m.Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("chattmpl: decode JSON: %w", err)
			}
			return m, nil
		case '[':
			out := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("chattmpl: decode JSON: %w", err)
			}
			return out, nil
		}
		return nil, fmt.Errorf("chattmpl: decode JSON: unexpected %v", t)
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return nil, fmt.Errorf("chattmpl: decode JSON number %q: %w", t, err)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return int64(f), nil
		}
		return f, nil
	default:
		return t, nil // string, bool, nil
	}
}

// toRuntime converts a caller-supplied Go value into a runtime value. Go maps become *Map with
// sorted keys (Go maps have no order); use *Map to control key order.
func toRuntime(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case undefined, *list, *namespace, *callable:
		return x, nil
	case bool, string, int64, float64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		return DecodeJSON([]byte(x))
	case *Map:
		if x == nil {
			return nil, nil
		}
		m := NewMap()
		for _, k := range x.Keys {
			c, err := toRuntime(x.Values[k])
			if err != nil {
				return nil, err
			}
			m.Set(k, c)
		}
		return m, nil
	case []any:
		items := make([]any, len(x))
		for i, e := range x {
			c, err := toRuntime(e)
			if err != nil {
				return nil, err
			}
			items[i] = c
		}
		return newList(items), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		m := NewMap()
		for _, k := range keys {
			c, err := toRuntime(x[k])
			if err != nil {
				return nil, err
			}
			m.Set(k, c)
		}
		return m, nil
	case func(args ...any) (any, error):
		return &callable{name: "function", fn: func(_ *interp, args []any, _ *Map, _ *env) (any, error) {
			r, err := x(args...)
			if err != nil {
				return nil, err
			}
			return toRuntime(r)
		}}, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Slice, reflect.Array:
		items := make([]any, rv.Len())
		for i := range items {
			c, err := toRuntime(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			items[i] = c
		}
		return newList(items), nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		m := NewMap()
		for _, k := range keys {
			c, err := toRuntime(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface())
			if err != nil {
				return nil, err
			}
			m.Set(k, c)
		}
		return m, nil
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
		return toRuntime(rv.Elem().Interface())
	}
	return nil, fmt.Errorf("chattmpl: cannot use value of type %T in a template", v)
}

// typeName names a runtime value's type the way the reference's error messages do.
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "NullValue"
	case undefined:
		return "UndefinedValue"
	case bool:
		return "BooleanValue"
	case int64:
		return "IntegerValue"
	case float64:
		return "FloatValue"
	case string:
		return "StringValue"
	case *list:
		return "ArrayValue"
	case *Map:
		return "ObjectValue"
	case *namespace:
		return "NamespaceValue"
	case *callable:
		return "FunctionValue"
	default:
		return fmt.Sprintf("%T", x)
	}
}

// truthy is the reference's __bool__: empty string/list/dict, 0, false, none, undefined are false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0 && !math.IsNaN(x)
	case string:
		return x != ""
	case *list:
		return len(x.items) > 0
	case *Map:
		return x.Len() > 0
	}
	return true
}
