// This file implements the paged KV cache: for every layer one pool of K rows and one of V
// rows, [NumBlocks*BlockSize, KVDim] and [NumBlocks*BlockSize, VDim] f32 (Config.CacheDims:
// both KVHeads*HeadDim, or for multi-head latent attention the latent plus the RoPE key in K
// and no V), divided into blocks of BlockSize token slots.
// A sequence owns a block table (block ids); position p lives in slot p%BlockSize of block
// table[p/BlockSize]. The serving engine's block manager decides which blocks a sequence holds.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
)

// PagedKV is the KV pool of a model. K[l] and V[l] are layer l's rows.
type PagedKV struct {
	K, V [][]float32 // per layer [NumBlocks*BlockSize*KVDim] and [NumBlocks*BlockSize*VDim] (with groups: its group's blocks)
	// KQ, VQ hold the rows instead of K and V (whose layers are then nil) when the cache's
	// type is not f32 (Model.KVCacheDType, kvdtype.go): per layer NumBlocks*BlockSize rows of
	// KFmt.RowBytes and VFmt.RowBytes bytes. KFmt and VFmt are the zero value for f32.
	KQ, VQ     [][]byte
	KFmt, VFmt kernels.KVFormat
	NumBlocks  int // group 0's blocks
	BlockSize  int // token slots per block
	KVDim      int // a K row's width (KVHeads*HeadDim; MLA: latent + RoPE key)
	VDim       int // a V row's width (KVHeads*HeadDim; MLA: 0)

	// KV groups (kvgroups.go), set by NewPagedKVGroups: Group[l] is layer l's group (nil: every
	// layer in group 0), GroupBlocks[g] group g's pool in blocks (nil: one group of NumBlocks),
	// Windows[g] its window (0 or absent: none). A sequence's table of a windowed group may
	// hold -1 for blocks wholly before the window of its first row.
	Group       []int
	GroupBlocks []int
	Windows     []int
}

// PrefaultLimit is the largest pool NewPagedKV commits up front; a larger one is reserved and
// its pages are committed as blocks are first written (a default budget sized for an absurd
// context length then costs nothing until it is used).
const PrefaultLimit = 512 << 20

// NewPagedKV allocates a pool of numBlocks blocks of blockSize slots for m, committed up front
// when it is at most PrefaultLimit bytes.
func (m *Model) NewPagedKV(numBlocks, blockSize int) (*PagedKV, error) {
	if numBlocks <= 0 || blockSize <= 0 {
		return nil, fmt.Errorf("model: paged KV of %d blocks of %d tokens", numBlocks, blockSize)
	}
	kd, vd := m.cacheDims()
	kv := &PagedKV{NumBlocks: numBlocks, BlockSize: blockSize, KVDim: kd, VDim: vd}
	if err := kv.setFormats(m, m.KVCacheDType); err != nil {
		return nil, err
	}
	lo, hi := m.Layers() // a pipeline stage holds its own layers' rows only
	commit := int64(hi-lo)*int64(numBlocks*blockSize)*kv.rowBytes() <= PrefaultLimit
	for l := range m.Config.Layers {
		if l < lo || l >= hi {
			kv.addLayer(0, false)
			continue
		}
		kv.addLayer(numBlocks*blockSize, commit)
	}
	return kv, nil
}

// prefaulted allocates n zeros and writes one value per 4 KiB page, so the pool's memory is
// committed now rather than by page faults in the middle of serving (a fresh 1 GiB pool
// otherwise costs about a second of faults spread over the first steps that reach it).
func prefaulted(n int) []float32 {
	s := make([]float32, n)
	for i := 0; i < n; i += 1024 {
		s[i] = 0
	}
	return s
}

// Bytes is the memory the pool holds.
func (kv *PagedKV) Bytes() int64 {
	if kv.GroupBlocks == nil {
		n := 0
		for l := range kv.K {
			if len(kv.K[l]) > 0 || (l < len(kv.KQ) && len(kv.KQ[l]) > 0) {
				n++
			}
		}
		return int64(n) * int64(kv.NumBlocks) * int64(kv.BlockSize) * kv.rowBytes()
	}
	var n int64
	for l := range kv.K {
		n += int64(len(kv.K[l])+len(kv.V[l])) * 4
		if l < len(kv.KQ) {
			n += int64(len(kv.KQ[l]) + len(kv.VQ[l]))
		}
	}
	return n
}

// slot returns the pool row of position pos through table.
func (kv *PagedKV) slot(table []int32, pos int) int {
	return int(table[pos/kv.BlockSize])*kv.BlockSize + pos%kv.BlockSize
}
