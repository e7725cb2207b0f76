// This file implements Parse: decoding and validating a safetensors header and slicing the
// tensors out of the data buffer that follows it.
package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/llmcloud/llmcloud/tensor"
)

// MaxHeaderSize is the largest JSON header accepted (the same limit as the reference
// implementation: 100 MB).
const MaxHeaderSize = 100_000_000

// headerEntry is one tensor's header entry; pointers detect missing fields.
type headerEntry struct {
	Dtype       *string   `json:"dtype"`
	Shape       []jsonNum `json:"shape"`
	DataOffsets []jsonNum `json:"data_offsets"`
}

// jsonNum is the text of a JSON number; unlike json.Number it refuses quoted strings.
type jsonNum string

func (n *jsonNum) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || !(b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
		return fmt.Errorf("want a number, got %s", b)
	}
	*n = jsonNum(b)
	return nil
}

// entry is a validated header entry.
type entry struct {
	name       string
	dtype      tensor.DType
	shape      []int
	begin, end uint64
}

// Parse parses a complete safetensors file held in data; name is used in error messages and
// becomes File.Path. The tensors' Data alias data.
func Parse(data []byte, name string) (*File, error) {
	fail := func(format string, args ...any) (*File, error) {
		return nil, fmt.Errorf("safetensors: %s: %s", name, fmt.Sprintf(format, args...))
	}
	if len(data) < 8 {
		return fail("file is %d bytes, too short for the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeaderSize {
		return fail("header length %d exceeds the %d-byte limit (not a safetensors file?)", n, MaxHeaderSize)
	}
	if n > uint64(len(data)-8) {
		return fail("header length %d is larger than the %d bytes after it (file truncated?)", n, len(data)-8)
	}
	hdr := data[8 : 8+n]
	if n < 2 || hdr[0] != '{' {
		return fail("header does not start with a JSON object '{' (not a safetensors file?)")
	}
	buf := data[8+n:]
	meta, entries, err := decodeHeader(hdr, uint64(len(buf)))
	if err != nil {
		return fail("%v", err)
	}
	if err := checkCoverage(entries, uint64(len(buf))); err != nil {
		return fail("%v", err)
	}
	f := &File{Path: name, Metadata: meta, Tensors: make([]tensor.Tensor, len(entries)),
		index: make(map[string]int, len(entries))}
	for i, e := range entries {
		f.Tensors[i] = tensor.Tensor{Name: e.name, Type: e.dtype, Shape: e.shape,
			Data: buf[e.begin:e.end:e.end]}
		f.index[e.name] = i
	}
	return f, nil
}

// decodeHeader walks the top-level JSON object of the header token by token so that duplicate
// names are caught, and validates every entry against a data buffer of bufLen bytes.
func decodeHeader(hdr []byte, bufLen uint64) (map[string]string, []entry, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if _, err := dec.Token(); err != nil { // the '{' checked by the caller
		return nil, nil, fmt.Errorf("header JSON: %v", err)
	}
	var meta map[string]string
	var entries []entry
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("header JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("header JSON: object key expected, got %v", tok)
		}
		if seen[key] {
			return nil, nil, fmt.Errorf("header JSON: duplicate entry %q", key)
		}
		seen[key] = true
		if key == "__metadata__" {
			if err := dec.Decode(&meta); err != nil {
				return nil, nil, fmt.Errorf("__metadata__ must map strings to strings: %v", jsonErr(err))
			}
			continue
		}
		var h headerEntry
		if err := dec.Decode(&h); err != nil {
			return nil, nil, fmt.Errorf("tensor %q: bad header entry: %v", key, jsonErr(err))
		}
		e, err := checkEntry(key, &h, bufLen)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %v", key, err)
		}
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil { // closing '}'
		return nil, nil, fmt.Errorf("header JSON: %v", jsonErr(err))
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, nil, fmt.Errorf("header JSON: after the object: %v", err)
		}
		return nil, nil, fmt.Errorf("header JSON: unexpected %v after the object", tok)
	}
	return meta, entries, nil
}

// jsonErr turns io.ErrUnexpectedEOF into a readable message.
func jsonErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("unexpected end of JSON")
	}
	return err
}

// checkEntry validates one header entry: dtype, shape, offsets and byte size.
func checkEntry(name string, h *headerEntry, bufLen uint64) (entry, error) {
	e := entry{name: name}
	if h.Dtype == nil {
		return e, errors.New(`missing "dtype"`)
	}
	dt, ok := supported[*h.Dtype]
	if !ok {
		if _, k := known[*h.Dtype]; k {
			return e, fmt.Errorf("unsupported dtype %s in tensor %q (llmcloud reads %s)", *h.Dtype, name, supportedNames)
		}
		return e, fmt.Errorf("unknown dtype %q", *h.Dtype)
	}
	e.dtype = dt
	if h.Shape == nil {
		return e, errors.New(`missing "shape"`)
	}
	if h.DataOffsets == nil {
		return e, errors.New(`missing "data_offsets"`)
	}
	e.shape = make([]int, len(h.Shape))
	elems := uint64(1)
	for i, s := range h.Shape {
		d, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || d < 0 || d > 1<<48 {
			return e, fmt.Errorf("shape %v: dimension %d is not a valid size", h.Shape, i)
		}
		e.shape[i] = int(d)
		if elems != 0 && uint64(d) > (1<<62)/elems {
			return e, fmt.Errorf("shape %v is too large", h.Shape)
		}
		elems *= uint64(d)
	}
	if len(h.DataOffsets) != 2 {
		return e, fmt.Errorf("data_offsets must have 2 entries, has %d", len(h.DataOffsets))
	}
	var off [2]uint64
	for i, s := range h.DataOffsets {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return e, fmt.Errorf("data_offsets %v: %q is not a valid offset", h.DataOffsets, s)
		}
		off[i] = v
	}
	e.begin, e.end = off[0], off[1]
	if e.begin > e.end {
		return e, fmt.Errorf("data_offsets [%d, %d]: begin after end", e.begin, e.end)
	}
	if e.end > bufLen {
		return e, fmt.Errorf("data_offsets [%d, %d] extend beyond the %d-byte data buffer (file truncated?)", e.begin, e.end, bufLen)
	}
	want := elems * uint64(dt.BlockBytes())
	if got := e.end - e.begin; got != want {
		return e, fmt.Errorf("%s %v needs %d bytes but data_offsets [%d, %d] span %d", *h.Dtype, e.shape, want, e.begin, e.end, got)
	}
	return e, nil
}

// checkCoverage sorts entries by offset and checks that they tile the data buffer exactly:
// no overlap, no hole, nothing left over at the end.
func checkCoverage(entries []entry, bufLen uint64) error {
	slices.SortStableFunc(entries, func(a, b entry) int {
		if a.begin != b.begin {
			return cmp.Compare(a.begin, b.begin)
		}
		return cmp.Compare(a.end, b.end)
	})
	var pos uint64
	prev := ""
	for _, e := range entries {
		switch {
		case e.begin < pos:
			return fmt.Errorf("tensor %q data_offsets [%d, %d] overlap tensor %q (ends at %d)", e.name, e.begin, e.end, prev, pos)
		case e.begin > pos:
			return fmt.Errorf("hole of %d bytes in the data buffer before tensor %q at offset %d", e.begin-pos, e.name, pos)
		}
		pos = e.end
		prev = e.name
	}
	if pos != bufLen {
		return fmt.Errorf("tensors cover %d bytes but the data buffer has %d (%d trailing bytes)", pos, bufLen, bufLen-pos)
	}
	return nil
}
