// This file holds the FuzzParse target: Parse must never panic, and whatever it accepts must
// be self-consistent and survive a Write/Parse round trip.
package safetensors

import (
	"bytes"
	"testing"
)

func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, sampleTensors(), map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Add(rawFile(`{}`, nil))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 8)))
	f.Add(rawFile(`{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		var out []byte
		for i := range file.Tensors {
			tt := &file.Tensors[i]
			if err := tt.Check(); err != nil {
				t.Fatalf("accepted tensor fails Check: %v", err)
			}
			if g, ok := file.Tensor(tt.Name); !ok || g != tt {
				t.Fatalf("Tensor(%q) lookup broken", tt.Name)
			}
			out = append(out, tt.Data...)
		}
		var w bytes.Buffer
		if err := Write(&w, file.Tensors, file.Metadata); err != nil {
			t.Fatalf("re-writing an accepted file: %v", err)
		}
		again, err := Parse(w.Bytes(), "again")
		if err != nil {
			t.Fatalf("re-parsing a re-written file: %v", err)
		}
		if len(again.Tensors) != len(file.Tensors) {
			t.Fatalf("round trip changed the tensor count")
		}
		var out2 []byte
		for i := range again.Tensors {
			out2 = append(out2, again.Tensors[i].Data...)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the data")
		}
	})
}
