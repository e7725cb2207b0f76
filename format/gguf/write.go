// This file implements Write and WriteFile: GGUF v3 output in llama.cpp's layout (header,
// metadata, tensor infos, zero padding to the alignment, then each tensor's data padded to the
// alignment; a file without tensors ends unpadded), so a file that is read and written back
// unchanged is byte-identical.
package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/tensor"
)

type encoder struct {
	w   *bufio.Writer
	n   int64
	buf [8]byte
}

func (e *encoder) bytes(b []byte) { m, _ := e.w.Write(b); e.n += int64(m) }
func (e *encoder) u8(x uint8)     { e.bytes([]byte{x}) }
func (e *encoder) u16(x uint16)   { binary.LittleEndian.PutUint16(e.buf[:], x); e.bytes(e.buf[:2]) }
func (e *encoder) u32(x uint32)   { binary.LittleEndian.PutUint32(e.buf[:], x); e.bytes(e.buf[:4]) }
func (e *encoder) u64(x uint64)   { binary.LittleEndian.PutUint64(e.buf[:], x); e.bytes(e.buf[:8]) }
func (e *encoder) str(s string)   { e.u64(uint64(len(s))); m, _ := e.w.WriteString(s); e.n += int64(m) }
func (e *encoder) pad(align int64) {
	for e.n%align != 0 {
		e.u8(0)
	}
}

func (e *encoder) boolean(b bool) {
	if b {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// value encodes v (without its type tag, which the caller writes).
func (e *encoder) value(key string, v Value) error {
	bad := func() error {
		return fmt.Errorf("key %q: value type %s does not match Go value %T", key, v.Type, v.V)
	}
	ok := true
	switch v.Type {
	case TypeUint8:
		x, k := v.V.(uint8)
		ok = k
		e.u8(x)
	case TypeInt8:
		x, k := v.V.(int8)
		ok = k
		e.u8(uint8(x))
	case TypeUint16:
		x, k := v.V.(uint16)
		ok = k
		e.u16(x)
	case TypeInt16:
		x, k := v.V.(int16)
		ok = k
		e.u16(uint16(x))
	case TypeUint32:
		x, k := v.V.(uint32)
		ok = k
		e.u32(x)
	case TypeInt32:
		x, k := v.V.(int32)
		ok = k
		e.u32(uint32(x))
	case TypeFloat32:
		x, k := v.V.(float32)
		ok = k
		e.u32(math.Float32bits(x))
	case TypeBool:
		x, k := v.V.(bool)
		ok = k
		e.boolean(x)
	case TypeString:
		x, k := v.V.(string)
		ok = k
		e.str(x)
	case TypeUint64:
		x, k := v.V.(uint64)
		ok = k
		e.u64(x)
	case TypeInt64:
		x, k := v.V.(int64)
		ok = k
		e.u64(uint64(x))
	case TypeFloat64:
		x, k := v.V.(float64)
		ok = k
		e.u64(math.Float64bits(x))
	case TypeArray:
		return e.array(key, v)
	default:
		return fmt.Errorf("key %q: unknown value type %d", key, uint32(v.Type))
	}
	if !ok {
		return bad()
	}
	return nil
}

func (e *encoder) array(key string, v Value) error {
	e.u32(uint32(v.ElemType))
	bad := fmt.Errorf("key %q: array of %s does not match Go value %T", key, v.ElemType, v.V)
	switch s := v.V.(type) {
	case []uint8:
		return each(e, s, v.ElemType == TypeUint8, bad, e.u8)
	case []int8:
		return each(e, s, v.ElemType == TypeInt8, bad, func(x int8) { e.u8(uint8(x)) })
	case []uint16:
		return each(e, s, v.ElemType == TypeUint16, bad, e.u16)
	case []int16:
		return each(e, s, v.ElemType == TypeInt16, bad, func(x int16) { e.u16(uint16(x)) })
	case []uint32:
		return each(e, s, v.ElemType == TypeUint32, bad, e.u32)
	case []int32:
		return each(e, s, v.ElemType == TypeInt32, bad, func(x int32) { e.u32(uint32(x)) })
	case []float32:
		return each(e, s, v.ElemType == TypeFloat32, bad, func(x float32) { e.u32(math.Float32bits(x)) })
	case []bool:
		return each(e, s, v.ElemType == TypeBool, bad, e.boolean)
	case []string:
		return each(e, s, v.ElemType == TypeString, bad, e.str)
	case []uint64:
		return each(e, s, v.ElemType == TypeUint64, bad, e.u64)
	case []int64:
		return each(e, s, v.ElemType == TypeInt64, bad, func(x int64) { e.u64(uint64(x)) })
	case []float64:
		return each(e, s, v.ElemType == TypeFloat64, bad, func(x float64) { e.u64(math.Float64bits(x)) })
	case []Value:
		if v.ElemType != TypeArray {
			return bad
		}
		e.u64(uint64(len(s)))
		for i, x := range s {
			if x.Type != TypeArray {
				return fmt.Errorf("key %q: element %d of a nested array is a %s, not an array", key, i, x.Type)
			}
			if err := e.array(key, x); err != nil {
				return err
			}
		}
		return nil
	}
	return bad
}

func each[T any](e *encoder, s []T, ok bool, bad error, put func(T)) error {
	if !ok {
		return bad
	}
	e.u64(uint64(len(s)))
	for _, x := range s {
		put(x)
	}
	return nil
}

// alignmentOf returns general.alignment from kvs (default 32).
func alignmentOf(kvs []KV) (int64, error) {
	for _, kv := range kvs {
		if kv.Key == KeyAlignment {
			a, ok := asUint(kv.Value)
			if !ok || a == 0 || a&(a-1) != 0 || a > 1<<30 {
				return 0, fmt.Errorf("%s = %v: must be a power of two", KeyAlignment, kv.Value.V)
			}
			return int64(a), nil
		}
	}
	return defaultAlignment, nil
}

// Write writes a GGUF v3 file with the given metadata (in order) and tensors (in order, each
// Data matching its Type and Shape).
func Write(w io.Writer, kvs []KV, tensors []tensor.Tensor) error {
	align, err := alignmentOf(kvs)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		if seen[kv.Key] {
			return fmt.Errorf("duplicate metadata key %q", kv.Key)
		}
		seen[kv.Key] = true
	}
	names := make(map[string]bool, len(tensors))
	for i := range tensors {
		t := &tensors[i]
		if names[t.Name] {
			return fmt.Errorf("duplicate tensor name %q", t.Name)
		}
		names[t.Name] = true
		if len(t.Shape) > maxDims {
			return fmt.Errorf("tensor %s: %d dimensions, GGUF allows %d", t.Name, len(t.Shape), maxDims)
		}
		if err := t.Check(); err != nil {
			return err
		}
	}
	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.u32(magic)
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type))
		if err := e.value(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	var off int64
	for i := range tensors {
		t := &tensors[i]
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- {
			e.u64(uint64(t.Shape[j]))
		}
		e.u32(t.Type.GGMLType())
		e.u64(uint64(off))
		off += alignUp(int64(len(t.Data)), align)
	}
	if len(tensors) == 0 {
		// Metadata-only files (e.g. llama.cpp's vocab GGUFs) end right after the header, with
		// no padding for an empty data section.
		return e.w.Flush()
	}
	e.pad(align)
	for i := range tensors {
		e.bytes(tensors[i].Data)
		e.pad(align)
	}
	return e.w.Flush()
}

// WriteFile writes the file through a temporary file renamed over path once complete.
func WriteFile(path string, kvs []KV, tensors []tensor.Tensor) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Write(w, kvs, tensors) })
}
