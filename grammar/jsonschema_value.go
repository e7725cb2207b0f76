// This file parses JSON into an order-preserving tree (schemas list properties in an order the
// grammar keeps) and writes values back as compact JSON.

package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// jkind is the type of a jv.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNum
	jStr
	jArr
	jObj
)

// jv is a JSON value; objects keep their keys in document order.
type jv struct {
	kind jkind
	b    bool
	s    string // string value, or a number's text
	arr  []*jv
	keys []string
	vals []*jv
}

// get returns the value of key in an object (nil if absent or not an object).
func (v *jv) get(key string) *jv {
	if v == nil || v.kind != jObj {
		return nil
	}
	for i, k := range v.keys {
		if k == key {
			return v.vals[i]
		}
	}
	return nil
}

func parseJV(data []byte) (*jv, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJV(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the schema")
	}
	return v, nil
}

func decodeJV(dec *json.Decoder, depth int) (*jv, error) {
	if depth > 200 {
		return nil, fmt.Errorf("schema nested too deeply")
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case nil:
		return &jv{kind: jNull}, nil
	case bool:
		return &jv{kind: jBool, b: t}, nil
	case json.Number:
		return &jv{kind: jNum, s: string(t)}, nil
	case string:
		return &jv{kind: jStr, s: t}, nil
	case json.Delim:
		if t == '[' {
			v := &jv{kind: jArr}
			for dec.More() {
				e, err := decodeJV(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, e)
			}
			_, err := dec.Token()
			return v, err
		}
		v := &jv{kind: jObj}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			e, err := decodeJV(dec, depth+1)
			if err != nil {
				return nil, err
			}
			if v.get(k) != nil {
				return nil, fmt.Errorf("duplicate key %q", k)
			}
			v.keys = append(v.keys, k)
			v.vals = append(v.vals, e)
		}
		_, err := dec.Token()
		return v, err
	}
	return nil, fmt.Errorf("unexpected token %v", t)
}

// jsonString is the JSON encoding of s as json.Marshal writes it, without HTML escaping.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// compact writes v as compact JSON (numbers as written in the schema).
func (v *jv) compact(b *strings.Builder) {
	switch v.kind {
	case jNull:
		b.WriteString("null")
	case jBool:
		if v.b {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case jNum:
		b.WriteString(v.s)
	case jStr:
		b.WriteString(jsonString(v.s))
	case jArr:
		b.WriteByte('[')
		for i, e := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			e.compact(b)
		}
		b.WriteByte(']')
	case jObj:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(k))
			b.WriteByte(':')
			v.vals[i].compact(b)
		}
		b.WriteByte('}')
	}
}

func (v *jv) String() string {
	var b strings.Builder
	v.compact(&b)
	return b.String()
}

// rat is a number's exact value.
func (v *jv) rat() *big.Rat {
	if i := strings.IndexAny(v.s, "eE"); i >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(v.s[i+1:], "+")); err != nil || e > 400 || e < -400 {
			return nil // too large to handle exactly
		}
	}
	r, ok := new(big.Rat).SetString(v.s)
	if !ok {
		return nil
	}
	return r
}

// equalJV is JSON equality (numbers by value, objects ignoring key order).
func equalJV(a, b *jv) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case jNull:
		return true
	case jBool:
		return a.b == b.b
	case jStr:
		return a.s == b.s
	case jNum:
		ra, rb := a.rat(), b.rat()
		return ra != nil && rb != nil && ra.Cmp(rb) == 0
	case jArr:
		if len(a.arr) != len(b.arr) {
			return false
		}
		for i := range a.arr {
			if !equalJV(a.arr[i], b.arr[i]) {
				return false
			}
		}
		return true
	}
	if len(a.keys) != len(b.keys) {
		return false
	}
	for i, k := range a.keys {
		o := b.get(k)
		if o == nil || !equalJV(a.vals[i], o) {
			return false
		}
	}
	return true
}
