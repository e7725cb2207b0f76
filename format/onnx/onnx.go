// Package onnx writes (and reads back) the few ONNX protobuf messages a model export needs:
// ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto (with its
// TypeProto and TensorShapeProto) and OperatorSetIdProto, encoded by hand with protowire
// following the field numbers of onnx.proto. It knows nothing about llmcloud's models; the
// converter from graph.Graph lives in graph/onnxexport.
//
// This file holds the message types; write.go encodes them, read.go decodes them.
package onnx

import (
	"encoding/binary"
	"math"
)

// DataType is TensorProto.DataType.
type DataType int32

// Element types used here (onnx.proto's numbering).
const (
	Float DataType = 1
	Int32 DataType = 6
	Int64 DataType = 7
	Bool  DataType = 9
)

// Size is the bytes per element (0 when unknown).
func (d DataType) Size() int {
	switch d {
	case Float, Int32:
		return 4
	case Int64:
		return 8
	case Bool:
		return 1
	}
	return 0
}

// AttrType is AttributeProto.AttributeType.
type AttrType int32

// Attribute types used here.
const (
	AttrFloat  AttrType = 1
	AttrInt    AttrType = 2
	AttrString AttrType = 3
	AttrTensor AttrType = 4
	AttrFloats AttrType = 6
	AttrInts   AttrType = 7
)

// Tensor is a TensorProto with its data as little-endian raw bytes (raw_data), or, when
// External is set, stored in a separate file (data_location EXTERNAL).
type Tensor struct {
	Name     string
	DataType DataType
	Dims     []int64
	Raw      []byte
	External *External
}

// External locates a tensor's bytes in a file beside the model.
type External struct {
	Location       string // path relative to the model file's directory
	Offset, Length int64
}

// Attribute is an AttributeProto; the field that Type names is the meaningful one.
type Attribute struct {
	Name   string
	Type   AttrType
	F      float32
	I      int64
	S      string
	T      *Tensor
	Floats []float32
	Ints   []int64
}

// Node is a NodeProto.
type Node struct {
	Name, OpType, Domain string
	Inputs, Outputs      []string
	Attrs                []Attribute
}

// Dim is one dimension of a ValueInfo's shape: a size, or a symbol when Param is set.
type Dim struct {
	Value int64
	Param string
}

// ValueInfo is a ValueInfoProto of tensor type.
type ValueInfo struct {
	Name     string
	ElemType DataType
	Shape    []Dim
}

// Graph is a GraphProto.
type Graph struct {
	Name         string
	Nodes        []Node
	Initializers []*Tensor
	Inputs       []ValueInfo
	Outputs      []ValueInfo
	ValueInfo    []ValueInfo
}

// OpsetID is an OperatorSetIdProto ("" is the default ai.onnx domain).
type OpsetID struct {
	Domain  string
	Version int64
}

// Model is a ModelProto.
type Model struct {
	IRVersion       int64
	Opsets          []OpsetID
	ProducerName    string
	ProducerVersion string
	DocString       string
	Graph           Graph
	Metadata        map[string]string
}

// Attribute constructors.
func IntAttr(name string, v int64) Attribute { return Attribute{Name: name, Type: AttrInt, I: v} }
func FloatAttr(name string, v float32) Attribute {
	return Attribute{Name: name, Type: AttrFloat, F: v}
}
func IntsAttr(name string, v ...int64) Attribute {
	return Attribute{Name: name, Type: AttrInts, Ints: v}
}
func StringAttr(name, v string) Attribute { return Attribute{Name: name, Type: AttrString, S: v} }
func TensorAttr(name string, t *Tensor) Attribute {
	return Attribute{Name: name, Type: AttrTensor, T: t}
}

// FloatTensor is a float32 tensor of the given shape.
func FloatTensor(name string, dims []int64, v []float32) *Tensor {
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	return &Tensor{Name: name, DataType: Float, Dims: dims, Raw: raw}
}

// Int64Tensor is an int64 tensor of the given shape.
func Int64Tensor(name string, dims []int64, v []int64) *Tensor {
	raw := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(x))
	}
	return &Tensor{Name: name, DataType: Int64, Dims: dims, Raw: raw}
}

// Floats decodes a float32 tensor's raw data (nil for other types or external data).
func (t *Tensor) Floats() []float32 {
	if t.DataType != Float || t.Raw == nil {
		return nil
	}
	v := make([]float32, len(t.Raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Raw[4*i:]))
	}
	return v
}

// Int64s decodes an int64 tensor's raw data (nil for other types or external data).
func (t *Tensor) Int64s() []int64 {
	if t.DataType != Int64 || t.Raw == nil {
		return nil
	}
	v := make([]int64, len(t.Raw)/8)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(t.Raw[8*i:]))
	}
	return v
}
