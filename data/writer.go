// This file implements the writing side: a ShardWriter streams the tokens of one split into
// numbered shard files of at most a given number of tokens, and WriteMeta writes meta.json
// (atomically, last, so a directory without meta.json is an unfinished one).

package data

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
)

// DefaultShardTokens is the default shard size: 100M tokens (200 MB at uint16).
const DefaultShardTokens = 100_000_000

// ShardWriter writes one split as DIR/<split>_0000.bin, DIR/<split>_0001.bin, ...
type ShardWriter struct {
	dir, split    string
	bytesPerToken int
	vocabSize     int
	shardTokens   int64

	shards []Shard
	f      *os.File
	w      *bufio.Writer
	n      int64 // tokens in the open shard
	buf    []byte
	err    error
}

// NewShardWriter starts split in dir (which must exist). Token ids must be < vocabSize; a
// shard is closed once it holds shardTokens tokens.
func NewShardWriter(dir, split string, vocabSize int, shardTokens int64) (*ShardWriter, error) {
	if split != "train" && split != "val" {
		return nil, fmt.Errorf("data: unknown split %q (want \"train\" or \"val\")", split)
	}
	if shardTokens <= 0 {
		return nil, fmt.Errorf("data: shard size %d tokens must be positive", shardTokens)
	}
	if vocabSize <= 0 {
		return nil, fmt.Errorf("data: vocab size %d must be positive", vocabSize)
	}
	return &ShardWriter{dir: dir, split: split, bytesPerToken: BytesPerToken(DTypeFor(vocabSize)),
		vocabSize: vocabSize, shardTokens: shardTokens}, nil
}

// Write appends ids to the split, opening new shards as needed.
func (s *ShardWriter) Write(ids []int) error {
	for len(ids) > 0 && s.err == nil {
		if s.f == nil {
			s.err = s.open()
			if s.err != nil {
				break
			}
		}
		k := min(int64(len(ids)), s.shardTokens-s.n)
		s.buf = s.buf[:0]
		for _, id := range ids[:k] {
			if id < 0 || id >= s.vocabSize {
				s.err = fmt.Errorf("data: token id %d out of range [0,%d)", id, s.vocabSize)
				return s.err
			}
			if s.bytesPerToken == 2 {
				s.buf = binary.LittleEndian.AppendUint16(s.buf, uint16(id))
			} else {
				s.buf = binary.LittleEndian.AppendUint32(s.buf, uint32(id))
			}
		}
		if _, err := s.w.Write(s.buf); err != nil {
			s.err = fmt.Errorf("data: %w", err)
			break
		}
		s.n += k
		ids = ids[k:]
		if s.n == s.shardTokens {
			s.err = s.closeShard()
		}
	}
	return s.err
}

func (s *ShardWriter) open() error {
	name := fmt.Sprintf("%s_%04d.bin", s.split, len(s.shards))
	f, err := os.Create(filepath.Join(s.dir, name))
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	s.f, s.w, s.n = f, bufio.NewWriterSize(f, 1<<20), 0
	s.shards = append(s.shards, Shard{File: name})
	if _, err := s.w.Write(AppendHeader(nil, s.bytesPerToken)); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}

func (s *ShardWriter) closeShard() error {
	f := s.f
	s.f = nil
	s.shards[len(s.shards)-1].Tokens = s.n
	err := s.w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}

// Close finishes the last shard and returns the split's shards (empty when nothing was
// written). After an error it removes the files it wrote and returns that error.
func (s *ShardWriter) Close() ([]Shard, error) {
	if s.f != nil && s.err == nil {
		s.err = s.closeShard()
	}
	if s.err != nil {
		if s.f != nil {
			s.f.Close()
		}
		for _, sh := range s.shards {
			os.Remove(filepath.Join(s.dir, sh.File))
		}
		return nil, s.err
	}
	return s.shards, nil
}

// WriteMeta validates m and writes it as dir/meta.json.
func WriteMeta(dir string, m *Meta) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Train == nil {
		m.Train = []Shard{}
	}
	if m.Val == nil {
		m.Val = []Shard{}
	}
	return atomicfile.Write(filepath.Join(dir, MetaFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}
