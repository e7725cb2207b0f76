// Package gguf reads and writes GGUF v3 files (llama.cpp's model format): metadata key/value
// pairs plus tensor descriptors and data. Reading maps the file read-only and parses it without
// copying tensor data; writing reproduces llama.cpp's layout byte for byte. The byte layout is
// documented in docs/formats/gguf.md.
//
// This file defines the metadata value model: value types, Value and KV, and constructors.
package gguf

import "fmt"

// ValueType is a GGUF metadata value type id.
type ValueType uint32

// GGUF metadata value types (the numbering is fixed by the format).
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
	numTypes    ValueType = 13
)

var typeNames = [numTypes]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if t < numTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// fixedSize is the encoded size of a scalar of type t (0 for string and array).
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the smallest possible encoding of one value of type t (used to reject absurd
// counts before allocating).
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return t.fixedSize()
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// Value is a typed metadata value. For scalars V holds the Go type of the same name (uint8,
// int8, uint16, int16, uint32, int32, float32, bool, string, uint64, int64, float64). For arrays
// Type is TypeArray, ElemType the element type and V a typed slice ([]uint8 ... []float64,
// []bool, []string), or []Value for nested arrays (ElemType TypeArray, each element itself an
// array Value).
type Value struct {
	Type     ValueType
	ElemType ValueType
	V        any
}

func (v Value) String() string {
	if v.Type == TypeArray {
		return fmt.Sprintf("[%s]%v", v.ElemType, v.V)
	}
	return fmt.Sprintf("%s(%v)", v.Type, v.V)
}

// Scalar constructors.
func U8(x uint8) Value             { return Value{Type: TypeUint8, V: x} }
func I8(x int8) Value              { return Value{Type: TypeInt8, V: x} }
func U16(x uint16) Value           { return Value{Type: TypeUint16, V: x} }
func I16(x int16) Value            { return Value{Type: TypeInt16, V: x} }
func U32(x uint32) Value           { return Value{Type: TypeUint32, V: x} }
func I32(x int32) Value            { return Value{Type: TypeInt32, V: x} }
func F32(x float32) Value          { return Value{Type: TypeFloat32, V: x} }
func Bool(x bool) Value            { return Value{Type: TypeBool, V: x} }
func Str(x string) Value           { return Value{Type: TypeString, V: x} }
func U64(x uint64) Value           { return Value{Type: TypeUint64, V: x} }
func I64(x int64) Value            { return Value{Type: TypeInt64, V: x} }
func F64(x float64) Value          { return Value{Type: TypeFloat64, V: x} }
func arr(t ValueType, v any) Value { return Value{Type: TypeArray, ElemType: t, V: v} }

// Array constructors.
func U8Array(x []uint8) Value      { return arr(TypeUint8, x) }
func I8Array(x []int8) Value       { return arr(TypeInt8, x) }
func U16Array(x []uint16) Value    { return arr(TypeUint16, x) }
func I16Array(x []int16) Value     { return arr(TypeInt16, x) }
func U32Array(x []uint32) Value    { return arr(TypeUint32, x) }
func I32Array(x []int32) Value     { return arr(TypeInt32, x) }
func F32Array(x []float32) Value   { return arr(TypeFloat32, x) }
func BoolArray(x []bool) Value     { return arr(TypeBool, x) }
func StrArray(x []string) Value    { return arr(TypeString, x) }
func U64Array(x []uint64) Value    { return arr(TypeUint64, x) }
func I64Array(x []int64) Value     { return arr(TypeInt64, x) }
func F64Array(x []float64) Value   { return arr(TypeFloat64, x) }
func ArrayOf(elems ...Value) Value { return arr(TypeArray, elems) }
