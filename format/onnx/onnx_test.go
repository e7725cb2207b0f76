// Tests of the protobuf encoding: bytes checked by hand against onnx.proto's field numbers,
// a whole model decoded back (raw protowire and Unmarshal), external data, bad input.
package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestTensorBytes checks one TensorProto byte by byte: dims (1, varint), data_type (2),
// name (8, bytes), raw_data (9, bytes).
func TestTensorBytes(t *testing.T) {
	tn := FloatTensor("w", []int64{2}, []float32{1, -2})
	got := tn.append(nil)
	want := []byte{
		0x08, 0x02, // dims: 2
		0x10, 0x01, // data_type: FLOAT
		0x42, 0x01, 'w', // name
		0x4a, 0x08, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, // raw_data: 1.0, -2.0 little-endian
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tensor bytes\n got % x\nwant % x", got, want)
	}
}

// TestAttributeBytes: name (1), i (3) / f (2, fixed32) / ints (8, one varint each), type (20).
func TestAttributeBytes(t *testing.T) {
	for _, c := range []struct {
		a    Attribute
		want []byte
	}{
		{IntAttr("axis", -1), append([]byte{0x0a, 4, 'a', 'x', 'i', 's', 0x18},
			append(bytes.Repeat([]byte{0xff}, 9), 0x01, 0xa0, 0x01, 0x02)...)},
		{FloatAttr("e", 0.5), []byte{0x0a, 1, 'e', 0x15, 0x00, 0x00, 0x00, 0x3f, 0xa0, 0x01, 0x01}},
		{IntsAttr("p", 0, 2), []byte{0x0a, 1, 'p', 0x40, 0x00, 0x40, 0x02, 0xa0, 0x01, 0x07}},
	} {
		if got := c.a.append(nil); !bytes.Equal(got, c.want) {
			t.Errorf("%s:\n got % x\nwant % x", c.a.Name, got, c.want)
		}
	}
}

func testModel() *Model {
	return &Model{
		IRVersion: 8, Opsets: []OpsetID{{Version: 17}, {Domain: "com.example", Version: 1}},
		ProducerName: "llmcloud", ProducerVersion: "test", DocString: "doc",
		Metadata: map[string]string{"a": "1", "b": "2"},
		Graph: Graph{
			Name: "g",
			Nodes: []Node{
				{Name: "n0", OpType: "Gather", Inputs: []string{"w", "ids"}, Outputs: []string{"x"},
					Attrs: []Attribute{IntAttr("axis", 0)}},
				{Name: "n1", OpType: "Clip", Inputs: []string{"x", "", "hi"}, Outputs: []string{"y"}},
				{OpType: "Custom", Domain: "com.example", Inputs: []string{"y"}, Outputs: []string{"z"},
					Attrs: []Attribute{FloatAttr("f", 1.5), IntsAttr("perm", 0, 2, 1), StringAttr("s", "hi"),
						TensorAttr("t", Int64Tensor("", []int64{1}, []int64{7}))}},
			},
			Initializers: []*Tensor{FloatTensor("w", []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6}),
				FloatTensor("hi", nil, []float32{6})},
			Inputs:    []ValueInfo{{Name: "ids", ElemType: Int64, Shape: []Dim{{Param: "batch"}, {Value: 4}}}},
			Outputs:   []ValueInfo{{Name: "z", ElemType: Float, Shape: []Dim{{Param: "batch"}, {Value: 4}, {Value: 2}}}},
			ValueInfo: []ValueInfo{{Name: "x", ElemType: Float}},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	m := testModel()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// the top level read with protowire alone: ir_version (1), producer (2), opset_import (8),
	// graph (7)
	seen := map[protowire.Number]int{}
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			t.Fatal(protowire.ParseError(n))
		}
		rest = rest[n:]
		if num == 1 {
			v, _ := protowire.ConsumeVarint(rest)
			if typ != protowire.VarintType || v != 8 {
				t.Errorf("ir_version: type %v value %d", typ, v)
			}
		}
		seen[num]++
		rest = rest[protowire.ConsumeFieldValue(num, typ, rest):]
	}
	if seen[1] != 1 || seen[2] != 1 || seen[7] != 1 || seen[8] != 2 || seen[14] != 2 {
		t.Errorf("top-level fields %v", seen)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", got, m)
	}
	if f := got.Graph.Initializers[0].Floats(); !reflect.DeepEqual(f, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("initializer values %v", f)
	}
	if got.Graph.Nodes[1].Inputs[1] != "" || len(got.Graph.Nodes[1].Inputs) != 3 {
		t.Errorf("omitted optional input lost its slot: %q", got.Graph.Nodes[1].Inputs)
	}
}

func TestExternalData(t *testing.T) {
	m := testModel()
	big := make([]float32, 300)
	big[299] = 1
	m.Graph.Initializers = append([]*Tensor{FloatTensor("w", []int64{300}, big), FloatTensor("w2", []int64{256}, big[:256])},
		m.Graph.Initializers[1:]...)
	w := append([]byte(nil), m.Graph.Initializers[0].Raw...)
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := m.WriteFile(path, true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path + ".data")
	if err != nil {
		t.Fatal(err)
	}
	inits := got.Graph.Initializers
	for i, tn := range inits[:2] {
		x := tn.External
		if x == nil || tn.Raw != nil || x.Location != "m.onnx.data" || x.Offset != int64(4096*i) {
			t.Fatalf("initializer %d: %+v raw %d bytes", i, x, len(tn.Raw))
		}
	}
	x := inits[0].External
	if !bytes.Equal(data[x.Offset:x.Offset+x.Length], w) {
		t.Errorf("external bytes of w differ")
	}
	if inits[2].External != nil || !reflect.DeepEqual(inits[2].Floats(), []float32{6}) {
		t.Errorf("a small initializer went external: %+v", inits[2])
	}
}

// TestUnmarshalBad: truncated and garbage input give errors, not panics.
func TestUnmarshalBad(t *testing.T) {
	b, err := testModel().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{b[:len(b)-3], b[:7], {0xff, 0xff, 0xff}, {0x3a, 0x05, 0x0a}} {
		if _, err := Unmarshal(bad); err == nil {
			t.Errorf("% x: no error", bad[:min(len(bad), 8)])
		}
	}
}

// FuzzUnmarshal: any bytes decode or fail, never panic.
func FuzzUnmarshal(f *testing.F) {
	b, err := testModel().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := Unmarshal(data); err == nil && m == nil {
			t.Fatal("nil model without an error")
		}
	})
}
