// This file implements Dataset: the shards of one split, memory-mapped and checked (header,
// size, token ids below the vocabulary size), seen as one contiguous token stream.

package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/llmcloud/llmcloud/internal/mmap"
)

// Dataset is one split of a prepared directory: its shards, mapped read-only and read as one
// stream of tokens. It is safe for concurrent readers.
type Dataset struct {
	meta          *Meta
	dir, split    string
	bytesPerToken int
	shards        []mappedShard
	starts        []int64 // starts[i]: stream offset of shards[i]'s first token; len(shards)+1 entries
}

type mappedShard struct {
	name    string
	body    []byte // the tokens, after the header
	release func() error
}

// ReadMeta reads and validates dir/meta.json.
func ReadMeta(dir string) (*Meta, error) {
	b, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("data: %s has no %s (not a prepared data directory; run `llmcloud data prepare`)", dir, MetaFile)
		}
		return nil, fmt.Errorf("data: %w", err)
	}
	m, err := ParseMeta(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, dir)
	}
	return m, nil
}

// Open maps the shards of split ("train" or "val") of the directory dir written by
// `llmcloud data prepare`. Every shard's header, size and token ids are checked against
// meta.json; a missing, truncated or mismatched file is an error naming it.
func Open(dir, split string) (*Dataset, error) {
	m, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	list, err := m.Split(split)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("data: %s: split %q has no shards", dir, split)
	}
	d := &Dataset{meta: m, dir: dir, split: split, bytesPerToken: BytesPerToken(m.DType), starts: []int64{0}}
	for _, s := range list {
		ms, err := d.mapShard(s)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("data: %s: %w", filepath.Join(dir, s.File), err)
		}
		d.shards = append(d.shards, ms)
		d.starts = append(d.starts, d.starts[len(d.starts)-1]+s.Tokens)
	}
	return d, nil
}

func (d *Dataset) mapShard(s Shard) (mappedShard, error) {
	f, err := os.Open(filepath.Join(d.dir, s.File))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return mappedShard{}, errors.New("shard listed in meta.json is missing")
		}
		return mappedShard{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return mappedShard{}, err
	}
	want := HeaderBytes + s.Tokens*int64(d.bytesPerToken)
	if st.Size() != want {
		return mappedShard{}, fmt.Errorf("file is %d bytes, meta.json's %d %s tokens need %d (truncated or mismatched)",
			st.Size(), s.Tokens, d.meta.DType, want)
	}
	b, release, err := mmap.Map(f, st.Size())
	if err != nil {
		return mappedShard{}, err
	}
	h, err := ParseHeader(b)
	if err == nil && int(h.BytesPerToken) != d.bytesPerToken {
		err = fmt.Errorf("shard has %d bytes per token, meta.json says %s", h.BytesPerToken, d.meta.DType)
	}
	ms := mappedShard{name: s.File, body: b[min(len(b), HeaderBytes):], release: release}
	if err == nil {
		err = ms.checkIDs(d.bytesPerToken, d.meta.VocabSize)
	}
	if err != nil {
		release()
		return mappedShard{}, err
	}
	return ms, nil
}

// checkIDs rejects token ids outside the vocabulary (a model would index out of its embedding).
func (s mappedShard) checkIDs(bytesPerToken, vocabSize int) error {
	n := len(s.body) / bytesPerToken
	for i := range n {
		var id uint32
		if bytesPerToken == 2 {
			id = uint32(binary.LittleEndian.Uint16(s.body[2*i:]))
		} else {
			id = binary.LittleEndian.Uint32(s.body[4*i:])
		}
		if id >= uint32(vocabSize) {
			return fmt.Errorf("token %d has id %d, outside the vocabulary of %d", i, id, vocabSize)
		}
	}
	return nil
}

// Len is the number of tokens in the split.
func (d *Dataset) Len() int64 { return d.starts[len(d.starts)-1] }

// VocabSize is meta.json's vocab_size.
func (d *Dataset) VocabSize() int { return d.meta.VocabSize }

// Meta returns the directory's meta.json (shared; do not modify).
func (d *Dataset) Meta() *Meta { return d.meta }

// TokenizerPath is the absolute path of the tokenizer.json copied into the directory.
func (d *Dataset) TokenizerPath() string {
	p := filepath.Join(d.dir, d.meta.Tokenizer)
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// Read fills dst (len n) with the tokens at stream offsets [off, off+n), crossing shard
// boundaries as needed. The range must lie inside [0, Len()).
func (d *Dataset) Read(dst []int32, off int64) error {
	if off < 0 || off+int64(len(dst)) > d.Len() {
		return fmt.Errorf("data: read of %d tokens at %d outside the split's %d tokens", len(dst), off, d.Len())
	}
	// the last shard whose start is <= off
	i := sort.Search(len(d.shards), func(i int) bool { return d.starts[i+1] > off })
	for len(dst) > 0 {
		s := d.shards[i]
		local := off - d.starts[i]
		k := min(int64(len(dst)), d.starts[i+1]-off)
		if d.bytesPerToken == 2 {
			b := s.body[2*local:]
			for j := range k {
				dst[j] = int32(binary.LittleEndian.Uint16(b[2*j:]))
			}
		} else {
			b := s.body[4*local:]
			for j := range k {
				dst[j] = int32(binary.LittleEndian.Uint32(b[4*j:]))
			}
		}
		dst, off, i = dst[k:], off+k, i+1
	}
	return nil
}

// Close unmaps the shards. The Dataset and Loaders over it must not be used afterwards.
func (d *Dataset) Close() error {
	var first error
	for _, s := range d.shards {
		if err := s.release(); err != nil && first == nil {
			first = err
		}
	}
	d.shards = nil
	return first
}
