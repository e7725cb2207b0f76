// Package data is the training-data pipeline: token shards on disk (format.go, writer.go), a
// memory-mapped view of one split (dataset.go), the batch loader the trainer reads from
// (loader.go) and the text-to-shards preparation (prepare.go). The byte layout is documented in
// docs/formats/shards.md.
//
// This file implements the format itself: the 16-byte shard header and meta.json, parsed and
// validated without touching the shard bodies.
package data

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
)

// Format constants (docs/formats/shards.md).
const (
	FormatName  = "llmcloud-shards" // meta.json "format"
	Version     = 1                 // meta.json "version" and the shard header version
	Magic       = "LLMCTOK1"        // first 8 bytes of every shard
	HeaderBytes = 16                // magic, uint32 version, uint32 bytes per token
	MetaFile    = "meta.json"
)

// Shard is one entry of a split in meta.json.
type Shard struct {
	File   string `json:"file"`
	Tokens int64  `json:"tokens"`
}

// Meta is meta.json: what a prepared directory holds.
type Meta struct {
	Format    string  `json:"format"`
	Version   int     `json:"version"`
	Tokenizer string  `json:"tokenizer"` // file name inside the directory
	VocabSize int     `json:"vocab_size"`
	DType     string  `json:"dtype"` // "uint16" or "uint32"
	BOSID     int     `json:"bos_id"`
	EOSID     int     `json:"eos_id"`
	Train     []Shard `json:"train"`
	Val       []Shard `json:"val"`
}

// DTypeFor returns the narrowest token type for a vocabulary: uint16 up to 65536 tokens.
func DTypeFor(vocabSize int) string {
	if vocabSize <= 1<<16 {
		return "uint16"
	}
	return "uint32"
}

// BytesPerToken is the width of dtype, or 0 for an unknown dtype.
func BytesPerToken(dtype string) int {
	switch dtype {
	case "uint16":
		return 2
	case "uint32":
		return 4
	}
	return 0
}

// Split returns the shards of split "train" or "val".
func (m *Meta) Split(split string) ([]Shard, error) {
	switch split {
	case "train":
		return m.Train, nil
	case "val":
		return m.Val, nil
	}
	return nil, fmt.Errorf("data: unknown split %q (want \"train\" or \"val\")", split)
}

// ParseMeta decodes and validates meta.json.
func ParseMeta(b []byte) (*Meta, error) {
	var m Meta
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("data: %s: invalid JSON: %v", MetaFile, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the fields of m against each other.
func (m *Meta) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("data: %s: %s", MetaFile, fmt.Sprintf(format, a...))
	}
	if m.Format != FormatName {
		return bad("format %q is not %q", m.Format, FormatName)
	}
	if m.Version != Version {
		return bad("version %d is not supported (only %d)", m.Version, Version)
	}
	if m.VocabSize <= 0 || m.VocabSize > math.MaxInt32 {
		return bad("vocab_size %d out of range [1,2^31)", m.VocabSize)
	}
	bpt := BytesPerToken(m.DType)
	if bpt == 0 {
		return bad("dtype %q is neither uint16 nor uint32", m.DType)
	}
	if bpt == 2 && m.VocabSize > 1<<16 {
		return bad("vocab_size %d does not fit dtype uint16", m.VocabSize)
	}
	for name, id := range map[string]int{"bos_id": m.BOSID, "eos_id": m.EOSID} {
		if id < -1 || id >= m.VocabSize {
			return bad("%s %d out of range [-1,%d)", name, id, m.VocabSize)
		}
	}
	if err := checkName(m.Tokenizer); err != nil {
		return bad("tokenizer: %v", err)
	}
	seen := map[string]bool{}
	for _, split := range []string{"train", "val"} {
		shards, _ := m.Split(split)
		for i, s := range shards {
			if err := checkName(s.File); err != nil {
				return bad("%s[%d]: %v", split, i, err)
			}
			if seen[s.File] {
				return bad("%s[%d]: file %q listed twice", split, i, s.File)
			}
			seen[s.File] = true
			if s.Tokens < 0 || s.Tokens > (1<<62)/int64(bpt) {
				return bad("%s[%d] %s: token count %d out of range", split, i, s.File, s.Tokens)
			}
		}
	}
	return nil
}

// checkName accepts a plain file name: nothing that leaves the directory.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || filepath.Base(name) != name {
		return fmt.Errorf("%q is not a plain file name", name)
	}
	return nil
}

// Header is the fixed start of a shard file.
type Header struct {
	Version       uint32
	BytesPerToken uint32
}

// AppendHeader appends the 16-byte header of a shard with tokens bytesPerToken wide.
func AppendHeader(b []byte, bytesPerToken int) []byte {
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, Version)
	return binary.LittleEndian.AppendUint32(b, uint32(bytesPerToken))
}

// ParseHeader decodes and checks the first HeaderBytes of a shard.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderBytes {
		return Header{}, fmt.Errorf("shard header is %d bytes, want %d (truncated file)", len(b), HeaderBytes)
	}
	if string(b[:8]) != Magic {
		return Header{}, fmt.Errorf("bad magic %q (not an llmcloud token shard, want %q)", b[:8], Magic)
	}
	h := Header{Version: binary.LittleEndian.Uint32(b[8:]), BytesPerToken: binary.LittleEndian.Uint32(b[12:])}
	if h.Version != Version {
		return h, fmt.Errorf("shard version %d is not supported (only %d)", h.Version, Version)
	}
	if h.BytesPerToken != 2 && h.BytesPerToken != 4 {
		return h, fmt.Errorf("shard has %d bytes per token (want 2 or 4)", h.BytesPerToken)
	}
	return h, nil
}
