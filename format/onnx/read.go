// This file decodes what write.go encodes: a ModelProto back into the types of onnx.go, with
// protowire, skipping fields it does not know. Tests use it to check exported models; it is
// not a general ONNX reader (no sub-graphs, no typed *_data fields besides raw_data).
package onnx

import (
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// field is one decoded protobuf field: a varint / fixed value or bytes.
type field struct {
	num protowire.Number
	typ protowire.Type
	u   uint64
	b   []byte
}

// fields splits a message into its fields.
func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.u, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.u = uint64(v)
		case protowire.Fixed64Type:
			f.u, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

// Unmarshal decodes a ModelProto.
func Unmarshal(b []byte) (*Model, error) {
	fs, err := fields(b)
	if err != nil {
		return nil, fmt.Errorf("onnx: model: %w", err)
	}
	m := &Model{}
	for _, f := range fs {
		switch f.num {
		case modelIRVersion:
			m.IRVersion = int64(f.u)
		case modelProducerName:
			m.ProducerName = string(f.b)
		case modelProducerVersion:
			m.ProducerVersion = string(f.b)
		case modelDocString:
			m.DocString = string(f.b)
		case modelOpsetImport:
			o, err := decodeOpset(f.b)
			if err != nil {
				return nil, err
			}
			m.Opsets = append(m.Opsets, o)
		case modelMetadata:
			k, v, err := decodeEntry(f.b)
			if err != nil {
				return nil, err
			}
			if m.Metadata == nil {
				m.Metadata = map[string]string{}
			}
			m.Metadata[k] = v
		case modelGraph:
			if err := m.Graph.decode(f.b); err != nil {
				return nil, fmt.Errorf("onnx: graph: %w", err)
			}
		}
	}
	return m, nil
}

func decodeOpset(b []byte) (OpsetID, error) {
	fs, err := fields(b)
	var o OpsetID
	for _, f := range fs {
		switch f.num {
		case opsetDomain:
			o.Domain = string(f.b)
		case opsetVersion:
			o.Version = int64(f.u)
		}
	}
	return o, err
}

func decodeEntry(b []byte) (k, v string, err error) {
	fs, err := fields(b)
	for _, f := range fs {
		switch f.num {
		case entryKey:
			k = string(f.b)
		case entryValue:
			v = string(f.b)
		}
	}
	return k, v, err
}

func (g *Graph) decode(b []byte) error {
	fs, err := fields(b)
	if err != nil {
		return err
	}
	for _, f := range fs {
		switch f.num {
		case graphNode:
			var n Node
			if err := n.decode(f.b); err != nil {
				return fmt.Errorf("node %d: %w", len(g.Nodes), err)
			}
			g.Nodes = append(g.Nodes, n)
		case graphName:
			g.Name = string(f.b)
		case graphInitializer:
			t, err := decodeTensor(f.b)
			if err != nil {
				return fmt.Errorf("initializer %d: %w", len(g.Initializers), err)
			}
			g.Initializers = append(g.Initializers, t)
		case graphInput, graphOutput, graphValueInfo:
			v, err := decodeValueInfo(f.b)
			if err != nil {
				return err
			}
			switch f.num {
			case graphInput:
				g.Inputs = append(g.Inputs, v)
			case graphOutput:
				g.Outputs = append(g.Outputs, v)
			default:
				g.ValueInfo = append(g.ValueInfo, v)
			}
		}
	}
	return nil
}

func (n *Node) decode(b []byte) error {
	fs, err := fields(b)
	if err != nil {
		return err
	}
	for _, f := range fs {
		switch f.num {
		case nodeInput:
			n.Inputs = append(n.Inputs, string(f.b))
		case nodeOutput:
			n.Outputs = append(n.Outputs, string(f.b))
		case nodeName:
			n.Name = string(f.b)
		case nodeOpType:
			n.OpType = string(f.b)
		case nodeDomain:
			n.Domain = string(f.b)
		case nodeAttribute:
			var a Attribute
			if err := a.decode(f.b); err != nil {
				return err
			}
			n.Attrs = append(n.Attrs, a)
		}
	}
	return nil
}

func (a *Attribute) decode(b []byte) error {
	fs, err := fields(b)
	if err != nil {
		return err
	}
	for _, f := range fs {
		switch f.num {
		case attrName:
			a.Name = string(f.b)
		case attrType:
			a.Type = AttrType(f.u)
		case attrF:
			a.F = math.Float32frombits(uint32(f.u))
		case attrI:
			a.I = int64(f.u)
		case attrS:
			a.S = string(f.b)
		case attrT:
			if a.T, err = decodeTensor(f.b); err != nil {
				return err
			}
		case attrFloats:
			a.Floats = append(a.Floats, math.Float32frombits(uint32(f.u)))
		case attrInts:
			a.Ints = append(a.Ints, int64(f.u))
		}
	}
	return nil
}

func decodeTensor(b []byte) (*Tensor, error) {
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	t := &Tensor{}
	ext := map[string]string{}
	external := false
	for _, f := range fs {
		switch f.num {
		case tensorDims:
			t.Dims = append(t.Dims, int64(f.u))
		case tensorDataType:
			t.DataType = DataType(f.u)
		case tensorName:
			t.Name = string(f.b)
		case tensorRawData:
			t.Raw = f.b
		case tensorExternalData:
			k, v, err := decodeEntry(f.b)
			if err != nil {
				return nil, err
			}
			ext[k] = v
		case tensorDataLocation:
			external = f.u == locationExternal
		}
	}
	if external {
		t.External = &External{Location: ext["location"]}
		t.External.Offset, _ = strconv.ParseInt(ext["offset"], 10, 64)
		t.External.Length, _ = strconv.ParseInt(ext["length"], 10, 64)
	}
	return t, nil
}

func decodeValueInfo(b []byte) (ValueInfo, error) {
	var v ValueInfo
	fs, err := fields(b)
	if err != nil {
		return v, err
	}
	for _, f := range fs {
		switch f.num {
		case valueInfoName:
			v.Name = string(f.b)
		case valueInfoType:
			if err := v.decodeType(f.b); err != nil {
				return v, fmt.Errorf("value %s: %w", v.Name, err)
			}
		}
	}
	return v, nil
}

func (v *ValueInfo) decodeType(b []byte) error {
	fs, err := fields(b)
	if err != nil {
		return err
	}
	for _, f := range fs {
		if f.num != typeTensor {
			continue
		}
		tt, err := fields(f.b)
		if err != nil {
			return err
		}
		for _, g := range tt {
			switch g.num {
			case tensorTypeElem:
				v.ElemType = DataType(g.u)
			case tensorTypeShape:
				dims, err := fields(g.b)
				if err != nil {
					return err
				}
				v.Shape = []Dim{}
				for _, d := range dims {
					if d.num != shapeDim {
						continue
					}
					df, err := fields(d.b)
					if err != nil {
						return err
					}
					var dim Dim
					for _, x := range df {
						switch x.num {
						case dimValue:
							dim.Value = int64(x.u)
						case dimParam:
							dim.Param = string(x.b)
						}
					}
					v.Shape = append(v.Shape, dim)
				}
			}
		}
	}
	return nil
}
