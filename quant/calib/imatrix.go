// This file reads and writes importance matrices in llama.cpp's legacy imatrix .dat layout
// (what llama-imatrix writes and llama-quantize --imatrix reads), all little-endian:
//
//	int32 n_entries
//	n_entries times: int32 len, name[len], int32 ncall, int32 nval, float32 values[nval]
//	int32 last_call, int32 len, dataset[len]
//
// where values[i] = mean over the rows of x_i² times ncall (a reader divides by ncall).
package calib

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// Imatrix is per weight name the per-column mean of x² and the chunks it was computed on.
type Imatrix struct {
	Values  map[string][]float32
	Calls   map[string]int
	Chunks  int
	Dataset string
}

// Imatrix extracts the importance matrix of the collected statistics.
func (c *Collector) Imatrix(dataset string) *Imatrix {
	im := &Imatrix{Values: map[string][]float32{}, Calls: map[string]int{}, Chunks: c.chunk, Dataset: dataset}
	for name, s := range c.ByW {
		if s.Rows > 0 {
			nc := max(s.Calls, 1)
			v := s.MeanSq()
			for i := range v {
				v[i] = v[i] * float32(nc) / float32(nc) // as a reader of the file gets it back
			}
			im.Values[name], im.Calls[name] = v, nc
		}
	}
	return im
}

// WriteFile writes im at path in the .dat layout.
func (im *Imatrix) WriteFile(path string) error {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	names := make([]string, 0, len(im.Values))
	for n := range im.Values {
		names = append(names, n)
	}
	sort.Strings(names)
	w(int32(len(names)))
	for _, n := range names {
		v := im.Values[n]
		nc := max(im.Calls[n], 1)
		w(int32(len(n)))
		b.WriteString(n)
		w(int32(nc))
		w(int32(len(v)))
		for _, x := range v {
			w(x * float32(nc))
		}
	}
	w(int32(im.Chunks))
	w(int32(len(im.Dataset)))
	b.WriteString(im.Dataset)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ReadImatrix reads a .dat importance matrix.
func ReadImatrix(path string) (*Imatrix, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := bytes.NewReader(data)
	i32 := func(what string) (int, error) {
		var v int32
		if err := binary.Read(r, binary.LittleEndian, &v); err != nil {
			return 0, fmt.Errorf("imatrix %s: reading %s: %w", path, what, err)
		}
		return int(v), nil
	}
	n, err := i32("the entry count")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > 1<<20 {
		return nil, fmt.Errorf("imatrix %s: %d entries", path, n)
	}
	im := &Imatrix{Values: map[string][]float32{}, Calls: map[string]int{}}
	for e := 0; e < n; e++ {
		l, err := i32("a name length")
		if err != nil {
			return nil, err
		}
		if l <= 0 || l > r.Len() {
			return nil, fmt.Errorf("imatrix %s: entry %d: name length %d", path, e, l)
		}
		name := make([]byte, l)
		io.ReadFull(r, name)
		nc, err := i32("ncall of " + string(name))
		if err != nil {
			return nil, err
		}
		nv, err := i32("nval of " + string(name))
		if err != nil {
			return nil, err
		}
		if nv < 1 || 4*nv > r.Len() {
			return nil, fmt.Errorf("imatrix %s: entry %s: %d values, %d bytes left", path, name, nv, r.Len())
		}
		v := make([]float32, nv)
		binary.Read(r, binary.LittleEndian, v)
		for i := range v {
			if nc > 0 {
				v[i] /= float32(nc)
			}
			if math.IsNaN(float64(v[i])) || v[i] < 0 {
				return nil, fmt.Errorf("imatrix %s: entry %s: value %d is %v", path, name, i, v[i])
			}
		}
		im.Values[string(name)], im.Calls[string(name)] = v, nc
	}
	if r.Len() >= 8 {
		im.Chunks, _ = i32("last_call")
		l, _ := i32("the dataset length")
		if l > 0 && l <= r.Len() {
			ds := make([]byte, l)
			io.ReadFull(r, ds)
			im.Dataset = string(ds)
		}
	}
	return im, nil
}
