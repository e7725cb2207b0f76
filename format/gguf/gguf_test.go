// Self-contained tests: every value type (and nested arrays) written and read back, error
// messages for malformed headers, and truncation of a small file at every offset.
package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func allValueKVs() []KV {
	return []KV{
		{"general.architecture", Str("llama")},
		{"u8", U8(200)}, {"i8", I8(-100)}, {"u16", U16(60000)}, {"i16", I16(-30000)},
		{"u32", U32(4000000000)}, {"i32", I32(-2000000000)}, {"f32", F32(1.5)},
		{"bool.t", Bool(true)}, {"bool.f", Bool(false)}, {"str", Str("héllo\x00world")},
		{"u64", U64(1 << 63)}, {"i64", I64(-1 << 62)}, {"f64", F64(math.Pi)},
		{"empty", Str("")},
		{"a.u8", U8Array([]uint8{1, 2, 255})}, {"a.i8", I8Array([]int8{-1, 0, 1})},
		{"a.u16", U16Array([]uint16{1, 65535})}, {"a.i16", I16Array([]int16{-32768, 7})},
		{"a.u32", U32Array([]uint32{0, 1 << 31})}, {"a.i32", I32Array([]int32{-5, 5})},
		{"a.f32", F32Array([]float32{0.25, float32(math.Inf(-1))})},
		{"a.bool", BoolArray([]bool{true, false, true})},
		{"a.str", StrArray([]string{"a", "", "ccc"})},
		{"a.u64", U64Array([]uint64{math.MaxUint64})}, {"a.i64", I64Array([]int64{math.MinInt64})},
		{"a.f64", F64Array([]float64{-0.5})}, {"a.empty", F32Array([]float32{})},
		{"a.nested", ArrayOf(I32Array([]int32{1, 2}), StrArray([]string{"x"}), ArrayOf(U8Array([]uint8{9})))},
	}
}

func smallTensors() []tensor.Tensor {
	f32 := make([]byte, 2*3*4)
	for i := 0; i < 6; i++ {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(float32(i)))
	}
	q := make([]byte, 34)
	for i := range q {
		q[i] = byte(i * 7)
	}
	return []tensor.Tensor{
		{Name: "a", Type: tensor.F32, Shape: []int{2, 3}, Data: f32},
		{Name: "b.q8", Type: tensor.Q8_0, Shape: []int{1, 32}, Data: q},
		{Name: "c.vec", Type: tensor.F16, Shape: []int{5}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	}
}

func encode(t testing.TB, kvs []KV, ts []tensor.Tensor) []byte {
	var buf bytes.Buffer
	if err := Write(&buf, kvs, ts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAllValueTypesRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 64, 1} {
		kvs := allValueKVs()
		if align != 0 {
			kvs = append(kvs, KV{KeyAlignment, U32(align)})
		}
		data := encode(t, kvs, smallTensors())
		f, err := Parse(data, "mem.gguf")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f.KVs, kvs) {
			t.Fatalf("KVs differ:\n got  %v\n want %v", f.KVs, kvs)
		}
		wantAlign := 32
		if align != 0 {
			wantAlign = int(align)
		}
		if f.Alignment != wantAlign || f.DataOffset%int64(wantAlign) != 0 {
			t.Errorf("alignment %d data offset %d", f.Alignment, f.DataOffset)
		}
		for i, want := range smallTensors() {
			got := f.Tensors[i]
			if got.Name != want.Name || got.Type != want.Type || !reflect.DeepEqual(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("tensor %d: got %s %s %v, want %s %s %v", i, got.Name, got.Type, got.Shape, want.Name, want.Type, want.Shape)
			}
		}
		if again := encode(t, f.KVs, f.Tensors); !bytes.Equal(again, data) {
			t.Error("write(read(x)) != x")
		}
	}
}

func TestGetters(t *testing.T) {
	f, err := Parse(encode(t, allValueKVs(), nil), "mem.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Uint("u8"); !ok || v != 200 {
		t.Errorf("Uint(u8) = %d %v", v, ok)
	}
	if _, ok := f.Uint("i8"); ok {
		t.Error("Uint of a negative int8 succeeded")
	}
	if v, ok := f.Int("i64"); !ok || v != -1<<62 {
		t.Errorf("Int(i64) = %d", v)
	}
	if _, ok := f.Int("u64"); ok {
		t.Error("Int of 2^63 succeeded")
	}
	if v, ok := f.Float("f64"); !ok || v != math.Pi {
		t.Errorf("Float(f64) = %v", v)
	}
	if v, ok := f.Float("u32"); !ok || v != 4e9 {
		t.Errorf("Float(u32) = %v", v)
	}
	if v, ok := f.Bool("bool.t"); !ok || !v {
		t.Error("Bool(bool.t)")
	}
	if v, ok := f.String("str"); !ok || v != "héllo\x00world" {
		t.Errorf("String = %q", v)
	}
	if _, ok := f.String("u8"); ok {
		t.Error("String of a uint8 succeeded")
	}
	if v, ok := f.Strings("a.str"); !ok || len(v) != 3 || v[2] != "ccc" {
		t.Errorf("Strings = %q", v)
	}
	if v, ok := f.Int32s("a.i8"); !ok || !reflect.DeepEqual(v, []int32{-1, 0, 1}) {
		t.Errorf("Int32s(a.i8) = %v", v)
	}
	if _, ok := f.Int32s("a.u32"); ok {
		t.Error("Int32s of 2^31 succeeded")
	}
	if v, ok := f.Float32s("a.f64"); !ok || v[0] != -0.5 {
		t.Errorf("Float32s(a.f64) = %v", v)
	}
	if _, ok := f.Get("missing"); ok {
		t.Error("Get(missing) succeeded")
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("Tensor(nope) succeeded")
	}
}

func TestWriteErrors(t *testing.T) {
	cases := map[string]struct {
		kvs []KV
		ts  []tensor.Tensor
	}{
		"mismatched value":  {[]KV{{"k", Value{Type: TypeUint32, V: "x"}}}, nil},
		"mismatched array":  {[]KV{{"k", Value{Type: TypeArray, ElemType: TypeInt32, V: []float32{1}}}}, nil},
		"bad nesting":       {[]KV{{"k", ArrayOf(U8(1))}}, nil},
		"duplicate key":     {[]KV{{"k", U8(1)}, {"k", U8(2)}}, nil},
		"bad alignment":     {[]KV{{KeyAlignment, U32(48)}}, nil},
		"short data":        {nil, []tensor.Tensor{{Name: "t", Type: tensor.F32, Shape: []int{4}, Data: make([]byte, 8)}}},
		"duplicate tensor":  {nil, []tensor.Tensor{smallTensors()[0], smallTensors()[0]}},
		"too many dims":     {nil, []tensor.Tensor{{Name: "t", Type: tensor.F32, Shape: []int{1, 1, 1, 1, 1}, Data: make([]byte, 4)}}},
		"unknown type code": {[]KV{{"k", Value{Type: 77, V: 1}}}, nil},
	}
	for name, c := range cases {
		var buf bytes.Buffer
		if err := Write(&buf, c.kvs, c.ts); err == nil {
			t.Errorf("%s: Write succeeded", name)
		}
	}
}

// header builds the start of a GGUF file by hand.
func header(version uint32, nTensors, nKV uint64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, magic)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint64(b, nTensors)
	return binary.LittleEndian.AppendUint64(b, nKV)
}

func appendStr(b []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint64(b, uint64(len(s))), s...)
}

// tensorInfo appends one tensor descriptor.
func tensorInfo(b []byte, name string, ne []uint64, ggml uint32, off uint64) []byte {
	b = appendStr(b, name)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ne)))
	for _, n := range ne {
		b = binary.LittleEndian.AppendUint64(b, n)
	}
	b = binary.LittleEndian.AppendUint32(b, ggml)
	return binary.LittleEndian.AppendUint64(b, off)
}

func TestParseVersion2(t *testing.T) {
	data := appendStr(header(2, 0, 1), "k")
	data = binary.LittleEndian.AppendUint32(data, uint32(TypeUint16))
	data = binary.LittleEndian.AppendUint16(data, 7)
	f, err := Parse(data, "v2.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Uint("k"); f.Version != 2 || !ok || v != 7 {
		t.Errorf("version %d, k = %d %v", f.Version, v, ok)
	}
}

func TestParseErrors(t *testing.T) {
	withPad := func(b []byte, n int) []byte { return append(b, make([]byte, n)...) }
	kvHeader := func(key string, typ uint32) []byte {
		return binary.LittleEndian.AppendUint32(appendStr(header(3, 0, 1), key), typ)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"bad magic", []byte("GGML\x03\x00\x00\x00"), "bad magic"},
		{"version 1", header(1, 0, 0), "unsupported GGUF version 1"},
		{"version 4", header(4, 0, 0), "unsupported GGUF version 4"},
		{"huge kv count", withPad(header(3, 0, 1<<60), 76), "metadata count 1152921504606846976"},
		{"huge tensor count", withPad(header(3, 1<<62, 0), 76), "tensor count"},
		{"string too long", withPad(binary.LittleEndian.AppendUint64(header(3, 0, 1), 1<<40), 20), "larger than the"},
		{"unknown value type", withPad(kvHeader("k", 13), 8), "unknown value type 13"},
		{"unknown elem type", withPad(binary.LittleEndian.AppendUint32(kvHeader("k", 9), 99), 8), "unknown array element type 99"},
		{"huge array", withPad(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(kvHeader("k", 9), 6), 1<<61), 40), "array length"},
		{"bad bool", append(kvHeader("k", 7), 2), "neither 0 nor 1"},
		{"bad alignment", binary.LittleEndian.AppendUint32(kvHeader(KeyAlignment, 4), 24), "power of two"},
		{"n_dims 5", withPad(tensorInfo(header(3, 1, 0), "w", []uint64{1, 1, 1, 1, 1}, 0, 0), 64), "tensor w: n_dims 5 > 4"},
		{"unknown ggml type", withPad(tensorInfo(header(3, 1, 0), "w", []uint64{4}, 3, 0), 64), "tensor w: unknown or unsupported ggml type id 3"},
		{"overflowing shape", withPad(tensorInfo(header(3, 1, 0), "w", []uint64{1 << 40, 1 << 40}, 0, 0), 64), "shape overflows"},
		{"rows not blocks", withPad(tensorInfo(header(3, 1, 0), "w", []uint64{48, 2}, 8, 0), 64), "not a multiple of the block size"},
		{"misaligned offset", withPad(tensorInfo(header(3, 1, 0), "w", []uint64{4}, 0, 4), 64), "not a multiple of the alignment"},
		{"data past end", withPad(tensorInfo(header(3, 1, 0), "blk.0.attn_q.weight", []uint64{4096}, 0, 0), 10), "tensor blk.0.attn_q.weight: data [offset 96, 16384 bytes] runs past end of file (size 85)"},
		{"duplicate tensor", withPad(tensorInfo(tensorInfo(header(3, 2, 0), "w", []uint64{4}, 0, 0), "w", []uint64{4}, 0, 32), 64), "duplicate tensor name"},
	}
	for _, c := range cases {
		_, err := Parse(c.data, "bad.gguf")
		if err == nil {
			t.Errorf("%s: Parse succeeded", c.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "bad.gguf: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to start with the file name and contain %q", c.name, err, c.want)
		}
	}
}

func TestTruncationEveryOffset(t *testing.T) {
	data := encode(t, allValueKVs(), smallTensors())
	full, err := Parse(data, "full.gguf")
	if err != nil {
		t.Fatal(err)
	}
	// The file is readable exactly when it still holds the last byte of tensor data; the
	// trailing padding after it is not needed.
	lastEnd := full.DataOffset
	for i, tt := range full.Tensors {
		if i == len(full.Tensors)-1 {
			lastEnd += int64(len(tt.Data))
		} else {
			lastEnd += alignUp(int64(len(tt.Data)), int64(full.Alignment))
		}
	}
	if lastEnd >= int64(len(data)) {
		t.Fatalf("test file has no trailing padding (data ends at %d of %d)", lastEnd, len(data))
	}
	for n := 0; n < len(data); n++ {
		_, err := Parse(data[:n:n], "trunc.gguf")
		if (err == nil) != (int64(n) >= lastEnd) {
			t.Fatalf("truncated to %d of %d bytes (tensor data ends at %d): err = %v", n, len(data), lastEnd, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "trunc.gguf: ") {
			t.Fatalf("truncated at %d: error %q does not name the file", n, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir + "/missing.gguf"); err == nil {
		t.Error("Open of a missing file succeeded")
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Open of a directory: %v", err)
	}
	p := dir + "/x.gguf"
	if err := WriteFile(p, allValueKVs(), smallTensors()); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 3 || f.Tensors[1].Data[33] != byte(33*7) {
		t.Error("Open did not return the written tensors")
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	if err := f.Close(); err != nil {
		t.Error("second Close:", err)
	}
}
