// Tests for the llama2.c checkpoint reader and writer on the real stories260K.bin.
package llama2c

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tensor"
)

func TestOpenStories260K(t *testing.T) {
	p := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := Header{Dim: 64, HiddenDim: 172, Layers: 5, Heads: 8, KVHeads: 4, Vocab: 512, SeqLen: 512, Shared: true}
	if f.Header != want {
		t.Fatalf("header %+v, want %+v", f.Header, want)
	}
	// 1 embd + 9 per layer*5 + norm + 2 freq tables, no output.weight (tied).
	if len(f.Tensors) != 1+9*5+1+2 {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	k, ok := f.Tensor("blk.4.attn_k.weight")
	if !ok || k.Shape[0] != 32 || k.Shape[1] != 64 {
		t.Fatalf("blk.4.attn_k.weight: %v %v", ok, k)
	}
	if _, ok := f.Tensor("output.weight"); ok {
		t.Fatal("tied model has output.weight")
	}
	// The stored freq_cis tables must equal what the writer computes: cos(0)=1 at pos 0.
	re, _ := f.Tensor(FreqCisReal)
	row := make([]float32, 4)
	if err := tensor.DequantizeRow(tensor.F32, re.RowData(0), row); err != nil {
		t.Fatal(err)
	}
	for _, v := range row {
		if v != 1 {
			t.Fatalf("freq_cis_real[0] = %v", row)
		}
	}
	// Round trip: writing the parsed tensors (without the freq tables) reproduces the file.
	ts := map[string]*tensor.Tensor{}
	for i := range f.Tensors {
		if !strings.HasPrefix(f.Tensors[i].Name, "rope.") {
			ts[f.Tensors[i].Name] = &f.Tensors[i]
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, f.Header, ts); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(p)
	got := buf.Bytes()
	if len(got) != len(orig) {
		t.Fatalf("round trip: %d bytes, want %d", len(got), len(orig))
	}
	// Weights are bit-identical; the recomputed freq tables may differ in the last ulp.
	re2, _ := Parse("rt", got)
	for _, tt := range f.Tensors {
		t2, _ := re2.Tensor(tt.Name)
		if strings.HasPrefix(tt.Name, "rope.") {
			a, b := make([]float32, tt.Elems()), make([]float32, tt.Elems())
			tensor.DequantizeRow(tensor.F32, tt.Data, a)
			tensor.DequantizeRow(tensor.F32, t2.Data, b)
			for i := range a {
				if d := a[i] - b[i]; d > 1e-5 || d < -1e-5 {
					t.Fatalf("%s[%d]: %v vs %v", tt.Name, i, a[i], b[i])
				}
			}
			continue
		}
		if !bytes.Equal(tt.Data, t2.Data) {
			t.Fatalf("round trip changed %s", tt.Name)
		}
	}
}

func TestUntiedRoundTrip(t *testing.T) {
	h := Header{Dim: 8, HiddenDim: 12, Layers: 2, Heads: 2, KVHeads: 1, Vocab: 5, SeqLen: 4}
	ts := map[string]*tensor.Tensor{}
	var fill byte
	for _, s := range h.sections() {
		names := []string{s.name}
		if s.layer {
			names = []string{"blk.0." + s.name, "blk.1." + s.name}
		}
		for _, n := range names {
			if strings.HasPrefix(n, "rope.") {
				continue
			}
			d := make([]byte, prod(s.shape)*4)
			for i := 0; i < len(d); i += 4 {
				fill++
				d[i+2] = fill // small distinct floats
				d[i+3] = 0x3f
			}
			ts[n] = &tensor.Tensor{Name: n, Type: tensor.F32, Shape: s.shape, Data: d}
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, h, ts); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != h.FileSize() {
		t.Fatalf("size %d want %d", buf.Len(), h.FileSize())
	}
	f, err := Parse("mem", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Header != h {
		t.Fatalf("header %+v want %+v", f.Header, h)
	}
	for n, want := range ts {
		got, ok := f.Tensor(n)
		if !ok || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("%s differs after round trip", n)
		}
	}
	// Missing tensor is a clear error.
	delete(ts, "output.weight")
	if err := Write(&bytes.Buffer{}, h, ts); err == nil || !strings.Contains(err.Error(), "output.weight") {
		t.Fatalf("want error naming output.weight, got %v", err)
	}
}

func TestBadFiles(t *testing.T) {
	p := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"truncated":      data[:len(data)-4],
		"trailing bytes": append(append([]byte{}, data...), 0),
		"header":         data[:10],
	}
	bad := append([]byte{}, data...)
	bad[12] = 7 // n_heads = 7 does not divide dim 64
	cases["multiple"] = bad
	for want, b := range cases {
		_, err := Parse("x.bin", b)
		if err == nil || !strings.Contains(err.Error(), "x.bin") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	if _, err := Open("/nonexistent/file.bin"); err == nil {
		t.Error("no error for a missing file")
	}
}

func FuzzParse(f *testing.F) {
	h := Header{Dim: 4, HiddenDim: 6, Layers: 1, Heads: 2, KVHeads: 1, Vocab: 3, SeqLen: 2, Shared: true}
	b := make([]byte, h.FileSize())
	for i, v := range []int32{4, 6, 1, 2, 1, 3, 2} {
		b[4*i] = byte(v)
	}
	f.Add(b)
	f.Add(b[:30])
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		for _, tt := range fl.Tensors {
			if err := tt.Check(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
