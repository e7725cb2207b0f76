// This file implements the typed reading of a decoded JSON object: each getter reports a
// wrong type or a bad value as an error naming the file and the field, and JSON null counts
// as absent. Numbers are kept as json.Number so that integers are read exactly.
package hfdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
)

// readObject reads path and decodes it as one JSON object (numbers as json.Number).
func readObject(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hfdir: %w", err)
	}
	return decodeObject(data, path)
}

// decodeObject decodes data as one JSON object; name is used in errors.
func decodeObject(data []byte, name string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("hfdir: %s: bad JSON: unexpected end of file", name)
		}
		return nil, fmt.Errorf("hfdir: %s: bad JSON: %v", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("hfdir: %s: bad JSON: unexpected data after the top-level value", name)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("hfdir: %s: top-level JSON value is %s, want an object", name, typeName(v))
	}
	return m, nil
}

// obj reads typed fields of one JSON object, remembering the first error.
type obj struct {
	file   string // file name for errors
	prefix string // field path prefix, e.g. "rope_scaling."
	m      map[string]any
	err    error
}

func (o *obj) failf(key, format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("hfdir: %s: field %q: %s", o.file, o.prefix+key, fmt.Sprintf(format, args...))
	}
}

// get returns the value of key, treating null as absent.
func (o *obj) get(key string) (any, bool) {
	v, ok := o.m[key]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// asInt converts a JSON number that holds an integer (possibly written as 2.0 or 1e3).
func asInt(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return int(i), int64(int(i)) == i
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

func (o *obj) int(key string) (int, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	i, isInt := asInt(v)
	if !isInt {
		o.failf(key, "want an integer, got %s", describe(v))
		return 0, false
	}
	return i, true
}

// describe names a JSON value for an error: its type, and the value itself for numbers.
func describe(v any) string {
	if n, ok := v.(json.Number); ok {
		return "the number " + string(n)
	}
	return typeName(v)
}

func (o *obj) intPtr(key string) *int {
	if i, ok := o.int(key); ok {
		return &i
	}
	return nil
}

func (o *obj) float(key string) (float64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		o.failf(key, "want a number, got %s", typeName(v))
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		o.failf(key, "number %s out of range", n)
		return 0, false
	}
	return f, true
}

func (o *obj) floatPtr(key string) *float64 {
	if f, ok := o.float(key); ok {
		return &f
	}
	return nil
}

func (o *obj) str(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		o.failf(key, "want a string, got %s", typeName(v))
		return "", false
	}
	return s, true
}

func (o *obj) boolean(key string) (bool, bool) {
	v, ok := o.get(key)
	if !ok {
		return false, false
	}
	b, isBool := v.(bool)
	if !isBool {
		o.failf(key, "want true or false, got %s", typeName(v))
		return false, false
	}
	return b, true
}

func (o *obj) boolPtr(key string) *bool {
	if b, ok := o.boolean(key); ok {
		return &b
	}
	return nil
}

func (o *obj) strings(key string) []string {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	l, isList := v.([]any)
	if !isList {
		o.failf(key, "want a list of strings, got %s", typeName(v))
		return nil
	}
	out := make([]string, len(l))
	for i, e := range l {
		s, isStr := e.(string)
		if !isStr {
			o.failf(key, "element %d: want a string, got %s", i, typeName(e))
			return nil
		}
		out[i] = s
	}
	return out
}

// intOrList reads a field that is an integer or a list of integers (eos_token_id).
func (o *obj) intOrList(key string) []int {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	if i, isInt := asInt(v); isInt {
		return []int{i}
	}
	l, isList := v.([]any)
	if !isList {
		o.failf(key, "want an integer or a list of integers, got %s", describe(v))
		return nil
	}
	out := make([]int, len(l))
	for j, e := range l {
		i, isInt := asInt(e)
		if !isInt {
			o.failf(key, "element %d: want an integer, got %s", j, describe(e))
			return nil
		}
		out[j] = i
	}
	return out
}

// object returns a nested object as an obj whose errors carry the nested path.
func (o *obj) object(key string) *obj {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		o.failf(key, "want an object, got %s", typeName(v))
		return nil
	}
	return &obj{file: o.file, prefix: o.prefix + key + ".", m: m}
}

// adopt copies a nested obj's error into o.
func (o *obj) adopt(n *obj) {
	if o.err == nil && n != nil {
		o.err = n.err
	}
}

// sortedKeys lists m's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
