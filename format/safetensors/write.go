// This file implements Write and WriteFile: encoding tensors as one safetensors file whose
// JSON header is padded with spaces to a multiple of 8 bytes, as the Hugging Face writer does.
package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/tensor"
)

// encodeHeader builds the header (without the length prefix) for tensors laid out back to
// back in the given order, padded with spaces so that its length is a multiple of 8.
func encodeHeader(tensors []tensor.Tensor, metadata map[string]string) ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			b.WriteByte(',')
		}
		first = false
	}
	str := func(s string) {
		q, _ := json.Marshal(s) // marshalling a string cannot fail
		b.Write(q)
	}
	if len(metadata) > 0 {
		sep()
		b.WriteString(`"__metadata__":{`)
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			str(k)
			b.WriteByte(':')
			str(metadata[k])
		}
		b.WriteByte('}')
	}
	seen := make(map[string]bool, len(tensors))
	var off uint64
	for i := range tensors {
		t := &tensors[i]
		if t.Name == "__metadata__" {
			return nil, fmt.Errorf("tensor name %q is reserved", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		name := dtypeName(t.Type)
		if name == "" {
			return nil, fmt.Errorf("tensor %q: dtype %s cannot be stored in safetensors (supported: %s)", t.Name, t.Type, supportedNames)
		}
		if err := t.Check(); err != nil {
			return nil, err
		}
		sep()
		str(t.Name)
		b.WriteString(`:{"dtype":"` + name + `","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		end := off + uint64(len(t.Data))
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	return []byte(b.String()), nil
}

// Write encodes tensors, in the given order, and metadata (omitted when empty) as a
// safetensors file. Every tensor must have Data of exactly the size its Type and Shape call for.
func Write(w io.Writer, tensors []tensor.Tensor, metadata map[string]string) error {
	hdr, err := encodeHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	if len(hdr) > MaxHeaderSize {
		return fmt.Errorf("safetensors: write: header of %d bytes exceeds the %d-byte limit", len(hdr), MaxHeaderSize)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
	bw.Write(n[:])
	bw.Write(hdr)
	for i := range tensors {
		bw.Write(tensors[i].Data)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

// WriteFile writes a safetensors file at path. It writes a temporary file in the same
// directory, syncs it and renames it over path, so readers never see a partial file.
func WriteFile(path string, tensors []tensor.Tensor, metadata map[string]string) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Write(w, tensors, metadata) })
}
