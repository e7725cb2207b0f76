// This file tests that Parse rejects every kind of malformed file with a clear error, and
// never panics on truncated input.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	buf8 := make([]byte, 8)
	hugeLen := make([]byte, 16)
	binary.LittleEndian.PutUint64(hugeLen, 1<<40)
	pastEnd := make([]byte, 16)
	binary.LittleEndian.PutUint64(pastEnd, 100)
	cases := []struct {
		name string
		data []byte
		want string // substring of the error
	}{
		{"too short", []byte{1, 2, 3}, "too short"},
		{"absurd header length", hugeLen, "exceeds"},
		{"header past end", pastEnd, "larger than"},
		{"not an object", rawFile(`[1,2]   `, nil), "does not start with a JSON object"},
		{"bad JSON", rawFile(`{"a":{"dtype":"F32",`, nil), "unexpected end of JSON"},
		{"bad key", rawFile(`{"a" 1}`, nil), "expected colon"},
		{"trailing garbage", rawFile(`{} x`, nil), "after the object"},
		{"second object", rawFile(`{}{}`, nil), "after the object"},
		{"duplicate", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, buf8), "duplicate entry"},
		{"entry not object", rawFile(`{"a":3}`, nil), `tensor "a"`},
		{"metadata not strings", rawFile(`{"__metadata__":{"k":1}}`, nil), "__metadata__"},
		{"missing dtype", rawFile(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, buf8[:4]), `missing "dtype"`},
		{"missing shape", rawFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, buf8[:4]), `missing "shape"`},
		{"missing offsets", rawFile(`{"a":{"dtype":"F32","shape":[1]}}`, buf8[:4]), `missing "data_offsets"`},
		{"unknown dtype", rawFile(`{"a":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}}`, buf8[:4]), `unknown dtype "F17"`},
		{"unsupported I64", rawFile(`{"pos":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, buf8), `unsupported dtype I64 in tensor "pos"`},
		{"unsupported I8", rawFile(`{"m":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}}`, buf8), `unsupported dtype I8 in tensor "m"`},
		{"unsupported BOOL", rawFile(`{"m":{"dtype":"BOOL","shape":[8],"data_offsets":[0,8]}}`, buf8), `unsupported dtype BOOL`},
		{"unsupported F64", rawFile(`{"m":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, buf8), `unsupported dtype F64`},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, buf8[:4]), "not a valid size"},
		{"quoted dim", rawFile(`{"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}}`, buf8[:4]), "want a number"},
		{"fractional dim", rawFile(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, buf8[:4]), "not a valid size"},
		{"huge shape", rawFile(`{"a":{"dtype":"F32","shape":[281474976710656,281474976710656],"data_offsets":[0,4]}}`, buf8[:4]), "too large"},
		{"offsets count", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, buf8[:4]), "2 entries"},
		{"negative offset", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, buf8[:4]), "not a valid offset"},
		{"begin after end", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}`, buf8[:4]), "begin after end"},
		{"out of bounds", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, buf8[:4]), "beyond the 4-byte data buffer"},
		{"size mismatch", rawFile(`{"a":{"dtype":"F16","shape":[3],"data_offsets":[0,8]}}`, buf8), "needs 6 bytes"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, buf8), "overlap"},
		{"hole", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, buf8), "hole of 4 bytes"},
		{"trailing bytes", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, buf8), "4 trailing bytes"},
	}
	for _, c := range cases {
		_, err := Parse(c.data, "case.safetensors")
		if err == nil {
			t.Errorf("%s: Parse succeeded", c.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "case.safetensors") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q should name the file and contain %q", c.name, msg, c.want)
		}
	}
}

// TestParseAccepts covers valid corner cases: padding, empty header, zero-size tensors,
// out-of-order entries.
func TestParseAccepts(t *testing.T) {
	buf := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for name, data := range map[string][]byte{
		"empty":          rawFile(`{}`, nil),
		"padded":         rawFile(`{}      `, nil),
		"empty metadata": rawFile(`{"__metadata__":{}}`, nil),
		"reversed":       rawFile(`{"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, buf),
		"zero size":      rawFile(`{"z":{"dtype":"BF16","shape":[0],"data_offsets":[8,8]},"a":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}}`, buf),
	} {
		f, err := Parse(data, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for i := 1; i < len(f.Tensors); i++ {
			if f.Tensors[i-1].Name > f.Tensors[i].Name && name == "reversed" {
				t.Errorf("%s: tensors not sorted by offset: %s before %s", name, f.Tensors[i-1].Name, f.Tensors[i].Name)
			}
		}
	}
}

// TestTruncation cuts a valid file at every length and checks that Parse fails cleanly.
func TestTruncation(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sampleTensors(), map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for n := 0; n < len(data); n++ {
		if _, err := Parse(data[:n:n], "cut"); err == nil {
			t.Fatalf("Parse of the first %d of %d bytes succeeded", n, len(data))
		}
	}
	if _, err := Parse(data, "whole"); err != nil {
		t.Fatal(err)
	}
}
