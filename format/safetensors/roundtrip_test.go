// This file tests Write/Parse/Open round trips and the exact byte layout of written files.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func TestRoundTrip(t *testing.T) {
	ts := sampleTensors()
	meta := map[string]string{"format": "pt", "note": "ünïcode \"quoted\""}
	var buf bytes.Buffer
	if err := Write(&buf, ts, meta); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	n := binary.LittleEndian.Uint64(data)
	if (8+n)%8 != 0 {
		t.Errorf("header length %d: data does not start on an 8-byte boundary", n)
	}
	f, err := Parse(data, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != len(ts) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(ts))
	}
	for _, w := range ts {
		g, ok := f.Tensor(w.Name)
		if !ok {
			t.Fatalf("tensor %s missing", w.Name)
		}
		sameTensor(t, g, w)
	}
	if len(f.Metadata) != 2 || f.Metadata["format"] != "pt" || f.Metadata["note"] != meta["note"] {
		t.Errorf("metadata %v, want %v", f.Metadata, meta)
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("Tensor(nope) found")
	}
	// Tensors come back sorted by offset, which is the written order (the empty tensor sits
	// at the same offset as the next one, so compare only non-empty ones).
	var order []string
	for _, x := range f.Tensors {
		if len(x.Data) > 0 {
			order = append(order, x.Name)
		}
	}
	var wantOrder []string
	for _, x := range ts {
		if len(x.Data) > 0 {
			wantOrder = append(wantOrder, x.Name)
		}
	}
	if len(order) != len(wantOrder) {
		t.Fatalf("order %v, want %v", order, wantOrder)
	}
	for i := range order {
		if order[i] != wantOrder[i] {
			t.Fatalf("order %v, want %v", order, wantOrder)
		}
	}
}

// TestLayout checks every byte of a small file against the format description: length
// prefix, compact JSON with __metadata__ first, space padding, then the data.
func TestLayout(t *testing.T) {
	a := f32Tensor("a", 1, 2)
	b := halfTensor("b", tensor.BF16, 0, 1, 2)
	var buf bytes.Buffer
	if err := Write(&buf, []tensor.Tensor{a, b}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	js := `{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[8,12]}}`
	for len(js)%8 != 0 {
		js += " "
	}
	want := rawFile(js, append(append([]byte{}, a.Data...), b.Data...))
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("written bytes\n%q\nwant\n%q", buf.Bytes(), want)
	}
}

func TestOpenAndWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.safetensors")
	ts := sampleTensors()
	if err := WriteFile(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after WriteFile, want 1 (temp file left?)", len(entries))
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != p || f.Metadata != nil {
		t.Errorf("Path %q Metadata %v", f.Path, f.Metadata)
	}
	for _, w := range ts {
		g, ok := f.Tensor(w.Name)
		if !ok {
			t.Fatalf("missing %s", w.Name)
		}
		sameTensor(t, g, w)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.safetensors")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open of a directory succeeded")
	}
	empty := filepath.Join(dir, "empty.safetensors")
	os.WriteFile(empty, nil, 0o644)
	_, err := Open(empty)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(empty)) {
		t.Errorf("Open(empty) = %v, want an error naming the file", err)
	}
}

func TestWriteErrors(t *testing.T) {
	good := f32Tensor("a", 0, 2)
	cases := map[string][]tensor.Tensor{
		"duplicate":    {good, good},
		"reserved":     {f32Tensor("__metadata__", 0, 1)},
		"short data":   {{Name: "s", Type: tensor.F32, Shape: []int{3}, Data: make([]byte, 8)}},
		"quantized":    {{Name: "q", Type: tensor.Q8_0, Shape: []int{32}, Data: make([]byte, 34)}},
		"negative dim": {{Name: "n", Type: tensor.F32, Shape: []int{-1}, Data: nil}},
	}
	for name, ts := range cases {
		var buf bytes.Buffer
		err := Write(&buf, ts, nil)
		if err == nil {
			t.Errorf("%s: Write succeeded", name)
			continue
		}
		if buf.Len() != 0 {
			t.Errorf("%s: Write wrote %d bytes before failing", name, buf.Len())
		}
		t.Logf("%s: %v", name, err)
	}
	p := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := WriteFile(p, cases["duplicate"], nil); err == nil {
		t.Error("WriteFile with duplicates succeeded")
	}
	if _, err := os.Stat(p); err == nil {
		t.Error("failed WriteFile left a file behind")
	}
}
