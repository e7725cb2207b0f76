// This file implements the typed metadata and tensor lookups on File (Get, String, Uint, ...).
// Numeric getters accept any numeric value type whose value fits the requested Go type.
package gguf

import (
	"math"

	"github.com/llmcloud/llmcloud/tensor"
)

// Get returns the value stored under key.
func (f *File) Get(key string) (Value, bool) {
	if f.kvIndex != nil {
		i, ok := f.kvIndex[key]
		if !ok {
			return Value{}, false
		}
		return f.KVs[i].Value, true
	}
	for _, kv := range f.KVs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return Value{}, false
}

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Get(key)
	if !ok || v.Type != TypeString {
		return "", false
	}
	return v.V.(string), true
}

func asUint(v Value) (uint64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	}
	if i, ok := asInt(v); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

func asInt(v Value) (int64, bool) {
	switch x := v.V.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

// Uint returns a non-negative integer value of any integer type.
func (f *File) Uint(key string) (uint64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return asUint(v)
}

// Int returns an integer value of any integer type that fits in int64.
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return asInt(v)
}

// Float returns a value of any numeric type as float64.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if u, ok := asUint(v); ok {
		return float64(u), true
	}
	if i, ok := asInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) {
	v, ok := f.Get(key)
	if !ok || v.Type != TypeBool {
		return false, false
	}
	return v.V.(bool), true
}

// Strings returns a string array.
func (f *File) Strings(key string) ([]string, bool) {
	v, ok := f.Get(key)
	if !ok || v.Type != TypeArray {
		return nil, false
	}
	s, ok := v.V.([]string)
	return s, ok
}

// Float32s returns a float32 array; other numeric arrays are converted.
func (f *File) Float32s(key string) ([]float32, bool) {
	v, ok := f.Get(key)
	if !ok || v.Type != TypeArray {
		return nil, false
	}
	if s, ok := v.V.([]float32); ok {
		return s, true
	}
	return convertSlice(v.V, func(x float64) (float32, bool) { return float32(x), true })
}

// Int32s returns an int32 array (e.g. tokenizer.ggml.token_type); other integer arrays are
// converted when every element fits.
func (f *File) Int32s(key string) ([]int32, bool) {
	v, ok := f.Get(key)
	if !ok || v.Type != TypeArray {
		return nil, false
	}
	if s, ok := v.V.([]int32); ok {
		return s, true
	}
	switch v.ElemType {
	case TypeFloat32, TypeFloat64, TypeBool, TypeString, TypeArray:
		return nil, false
	}
	return convertSlice(v.V, func(x float64) (int32, bool) {
		return int32(x), x >= math.MinInt32 && x <= math.MaxInt32
	})
}

// convertSlice maps a numeric slice (all integer types are exact in float64 up to 2^53, which
// covers int32 range checks) through conv.
func convertSlice[T any](s any, conv func(float64) (T, bool)) ([]T, bool) {
	var in []float64
	switch x := s.(type) {
	case []uint8:
		in = widen(x)
	case []int8:
		in = widen(x)
	case []uint16:
		in = widen(x)
	case []int16:
		in = widen(x)
	case []uint32:
		in = widen(x)
	case []int32:
		in = widen(x)
	case []uint64:
		in = widen(x)
	case []int64:
		in = widen(x)
	case []float32:
		in = widen(x)
	case []float64:
		in = x
	default:
		return nil, false
	}
	out := make([]T, len(in))
	for i, x := range in {
		var ok bool
		if out[i], ok = conv(x); !ok {
			return nil, false
		}
	}
	return out, true
}

func widen[E uint8 | int8 | uint16 | int16 | uint32 | int32 | uint64 | int64 | float32](s []E) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		out[i] = float64(x)
	}
	return out
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*tensor.Tensor, bool) {
	if f.tIndex != nil {
		i, ok := f.tIndex[name]
		if !ok {
			return nil, false
		}
		return &f.Tensors[i], true
	}
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}
