// This file is where a rank of a serving group keeps its weights (weightArena): its blocks of
// them are copied out of the model file's mapping into one anonymous mapping and the file's
// pages are released, so the weights resident in the rank are its part and nothing else.
//
// Binding a row block as a view of the mapping is not enough: the file's page cache is shared
// by every rank (and filled by readahead in large folios, up to 2 MiB), and a fault on a
// mapped file maps in the whole cached folio around the address, not just the page. With
// 1-6 MB tensors laid side by side, a TP=2 rank of a 320 MB F16 model had 120 MB of the file
// resident against a 91 MiB shard (/proc/PID/pagemap: its q, k and v were resident whole,
// and 3-7 MB of the embedding of which it reads a few rows). In an anonymous mapping, the
// resident bytes are the copied ones.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/tensor"
)

// arenaAlign keeps every weight in the arena on a cache line (the kernels' vector loads).
const arenaAlign = 64

// weightArena is one anonymous mapping (mmap.AnonHugeExact: huge pages for the decode's
// streaming reads, no 2 MiB round-up of the resident size) holding a rank's weights.
type weightArena struct {
	buf  []byte
	off  int
	free func() error
}

func newWeightArena(size int) (*weightArena, error) {
	buf, free, err := mmap.AnonHugeExact(max(size, 1))
	if err != nil {
		return nil, fmt.Errorf("model: the rank's weights (%d bytes): %w", size, err)
	}
	return &weightArena{buf: buf, free: free}, nil
}

// alloc returns n bytes of the arena; past its end (which arenaSize rules out) a Go slice.
func (a *weightArena) alloc(n int) []byte {
	off := (a.off + arenaAlign - 1) &^ (arenaAlign - 1)
	if off+n > len(a.buf) {
		return make([]byte, n)
	}
	a.off = off + n
	return a.buf[off : off+n : off+n]
}

// allocOrMake is alloc, or a Go slice without an arena (a nil a).
func (a *weightArena) allocOrMake(n int) []byte {
	if a == nil {
		return make([]byte, n)
	}
	return a.alloc(n)
}

// copyOf is t with its Data copied into a (t itself when a is nil).
func (a *weightArena) copyOf(t *tensor.Tensor) *tensor.Tensor {
	if a == nil || t == nil {
		return t
	}
	s := *t
	s.Data = a.alloc(len(t.Data))
	copy(s.Data, t.Data)
	return &s
}

// arenaSize is an upper bound of the bytes the weights names (the serving graph's) of one
// rank of tp take in an arena: 1/tp of a split weight, all of a replicated one.
func arenaSize(ws map[string]*tensor.Tensor, names []string, tp int, o graph.TPOptions) int {
	n := 0
	for _, name := range names {
		t := ws[name]
		if t == nil {
			continue
		}
		k := len(t.Data)
		if tp > 1 && graph.TPSplitDim(name, o) >= 0 {
			k /= tp
		}
		n += k + arenaAlign
	}
	return n
}

// WeightResidency is how much of a model's weights are resident in the process, measured from
// /proc/self/smaps: the model file's mapped pages and the rank's copies of its weights.
type WeightResidency struct {
	File   int64 // pages of the model file's mapping resident in the process
	Copies int64 // resident pages of the arena holding a serving rank's blocks (0: none)
}

// Total is all of the weight bytes resident in the process.
func (r WeightResidency) Total() int64 { return r.File + r.Copies }

// WeightResident measures m's resident weights. It fails where they are not known: a model
// not loaded from a mapped file (a Hugging Face directory, a parsed image) or a system
// without /proc/self/smaps.
func (m *Model) WeightResident() (WeightResidency, error) {
	var r WeightResidency
	if m.image == nil {
		return r, fmt.Errorf("model: the weights are not a file mapping")
	}
	var err error
	if r.File, err = mmap.ResidentBytes(m.image); err != nil {
		return r, fmt.Errorf("model: %w", err)
	}
	if m.arena != nil {
		if r.Copies, err = mmap.ResidentBytes(m.arena.buf); err != nil {
			return r, fmt.Errorf("model: %w", err)
		}
	}
	return r, nil
}
