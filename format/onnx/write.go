// This file encodes the messages of onnx.go as protobuf (field numbers from onnx.proto) and
// writes a model file, optionally with the initializers' bytes in a separate external-data
// file (needed above protobuf's 2 GiB message limit).
package onnx

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of onnx.proto.
const (
	modelIRVersion       = 1
	modelProducerName    = 2
	modelProducerVersion = 3
	modelDocString       = 6
	modelGraph           = 7
	modelOpsetImport     = 8
	modelMetadata        = 14

	opsetDomain  = 1
	opsetVersion = 2

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12
	graphValueInfo   = 13

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5
	nodeDomain    = 7

	attrName   = 1
	attrF      = 2
	attrI      = 3
	attrS      = 4
	attrT      = 5
	attrFloats = 7
	attrInts   = 8
	attrType   = 20

	tensorDims         = 1
	tensorDataType     = 2
	tensorName         = 8
	tensorRawData      = 9
	tensorExternalData = 13
	tensorDataLocation = 14

	entryKey   = 1
	entryValue = 2

	valueInfoName = 1
	valueInfoType = 2

	typeTensor      = 1 // TypeProto.tensor_type
	tensorTypeElem  = 1 // TypeProto.Tensor.elem_type
	tensorTypeShape = 2 // TypeProto.Tensor.shape
	shapeDim        = 1 // TensorShapeProto.dim
	dimValue        = 1 // TensorShapeProto.Dimension.dim_value
	dimParam        = 2 // TensorShapeProto.Dimension.dim_param

	locationExternal = 1
)

// MaxProtoBytes is the largest message protobuf readers accept.
const MaxProtoBytes = math.MaxInt32

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendMessage appends a length-delimited sub-message built by enc.
func appendMessage(b []byte, num protowire.Number, enc func([]byte) []byte) []byte {
	return appendBytes(b, num, enc(nil))
}

func appendEntry(b []byte, num protowire.Number, k, v string) []byte {
	return appendMessage(b, num, func(e []byte) []byte {
		return appendString(appendString(e, entryKey, k), entryValue, v)
	})
}

// Marshal encodes m as a ModelProto. It fails when the result would exceed MaxProtoBytes
// (write the initializers as external data then: WriteFile).
func (m *Model) Marshal() ([]byte, error) {
	var size int64
	for _, t := range m.Graph.Initializers {
		size += int64(len(t.Raw))
	}
	if size > MaxProtoBytes-(64<<20) {
		return nil, fmt.Errorf("onnx: %d bytes of initializers exceed the 2 GiB protobuf limit: use external data", size)
	}
	b := appendVarint(nil, modelIRVersion, uint64(m.IRVersion))
	if m.ProducerName != "" {
		b = appendString(b, modelProducerName, m.ProducerName)
	}
	if m.ProducerVersion != "" {
		b = appendString(b, modelProducerVersion, m.ProducerVersion)
	}
	if m.DocString != "" {
		b = appendString(b, modelDocString, m.DocString)
	}
	for _, o := range m.Opsets {
		b = appendMessage(b, modelOpsetImport, func(e []byte) []byte {
			if o.Domain != "" {
				e = appendString(e, opsetDomain, o.Domain)
			}
			return appendVarint(e, opsetVersion, uint64(o.Version))
		})
	}
	keys := make([]string, 0, len(m.Metadata))
	for k := range m.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = appendEntry(b, modelMetadata, k, m.Metadata[k])
	}
	b = appendMessage(b, modelGraph, m.Graph.append)
	if len(b) > MaxProtoBytes {
		return nil, fmt.Errorf("onnx: model of %d bytes exceeds the 2 GiB protobuf limit", len(b))
	}
	return b, nil
}

func (g *Graph) append(b []byte) []byte {
	for i := range g.Nodes {
		b = appendMessage(b, graphNode, g.Nodes[i].append)
	}
	if g.Name != "" {
		b = appendString(b, graphName, g.Name)
	}
	for _, t := range g.Initializers {
		b = appendMessage(b, graphInitializer, t.append)
	}
	for _, list := range []struct {
		num protowire.Number
		vs  []ValueInfo
	}{{graphInput, g.Inputs}, {graphOutput, g.Outputs}, {graphValueInfo, g.ValueInfo}} {
		for i := range list.vs {
			b = appendMessage(b, list.num, list.vs[i].append)
		}
	}
	return b
}

func (n *Node) append(b []byte) []byte {
	for _, s := range n.Inputs {
		b = appendString(b, nodeInput, s) // "" stays: an omitted optional input keeps its slot
	}
	for _, s := range n.Outputs {
		b = appendString(b, nodeOutput, s)
	}
	if n.Name != "" {
		b = appendString(b, nodeName, n.Name)
	}
	b = appendString(b, nodeOpType, n.OpType)
	for i := range n.Attrs {
		b = appendMessage(b, nodeAttribute, n.Attrs[i].append)
	}
	if n.Domain != "" {
		b = appendString(b, nodeDomain, n.Domain)
	}
	return b
}

func (a *Attribute) append(b []byte) []byte {
	b = appendString(b, attrName, a.Name)
	switch a.Type {
	case AttrFloat:
		b = protowire.AppendTag(b, attrF, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.F))
	case AttrInt:
		b = appendVarint(b, attrI, uint64(a.I))
	case AttrString:
		b = appendString(b, attrS, a.S)
	case AttrTensor:
		b = appendMessage(b, attrT, a.T.append)
	case AttrFloats:
		for _, f := range a.Floats {
			b = protowire.AppendTag(b, attrFloats, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, math.Float32bits(f))
		}
	case AttrInts:
		for _, v := range a.Ints {
			b = appendVarint(b, attrInts, uint64(v))
		}
	}
	return appendVarint(b, attrType, uint64(a.Type))
}

func (t *Tensor) append(b []byte) []byte {
	for _, d := range t.Dims {
		b = appendVarint(b, tensorDims, uint64(d))
	}
	b = appendVarint(b, tensorDataType, uint64(t.DataType))
	if t.Name != "" {
		b = appendString(b, tensorName, t.Name)
	}
	if t.External != nil {
		b = appendEntry(b, tensorExternalData, "location", t.External.Location)
		b = appendEntry(b, tensorExternalData, "offset", strconv.FormatInt(t.External.Offset, 10))
		b = appendEntry(b, tensorExternalData, "length", strconv.FormatInt(t.External.Length, 10))
		return appendVarint(b, tensorDataLocation, locationExternal)
	}
	return appendBytes(b, tensorRawData, t.Raw)
}

func (v *ValueInfo) append(b []byte) []byte {
	b = appendString(b, valueInfoName, v.Name)
	return appendMessage(b, valueInfoType, func(tp []byte) []byte {
		return appendMessage(tp, typeTensor, func(tt []byte) []byte {
			tt = appendVarint(tt, tensorTypeElem, uint64(v.ElemType))
			if v.Shape == nil {
				return tt // unknown rank
			}
			return appendMessage(tt, tensorTypeShape, func(sh []byte) []byte {
				for _, d := range v.Shape {
					sh = appendMessage(sh, shapeDim, func(e []byte) []byte {
						if d.Param != "" {
							return appendString(e, dimParam, d.Param)
						}
						return appendVarint(e, dimValue, uint64(d.Value))
					})
				}
				return sh
			})
		})
	})
}

// ExternalMinBytes is the smallest initializer WriteFile moves to external data: smaller ones
// (shapes, indices, scalars) stay inline, where shape inference can read them.
const ExternalMinBytes = 1024

// WriteFile writes m to path. With external set, the bytes of every initializer of at least
// ExternalMinBytes go to path+".data" (each at an offset aligned to 4096) and the model
// records their locations; the tensors' Raw fields are released as they are written.
func (m *Model) WriteFile(path string, external bool) error {
	if external {
		if err := m.externalize(path + ".data"); err != nil {
			return err
		}
	}
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func (m *Model) externalize(dataPath string) error {
	f, err := os.Create(dataPath)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var off int64
	var pad [4096]byte
	for _, t := range m.Graph.Initializers {
		if t.External != nil || len(t.Raw) < ExternalMinBytes {
			continue
		}
		if r := off % 4096; r != 0 {
			w.Write(pad[:4096-r])
			off += 4096 - r
		}
		if _, err := w.Write(t.Raw); err != nil {
			f.Close()
			return err
		}
		t.External = &External{Location: filepath.Base(dataPath), Offset: off, Length: int64(len(t.Raw))}
		off += int64(len(t.Raw))
		t.Raw = nil
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
