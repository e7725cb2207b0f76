// This file copies whole blocks of the paged KV pool to and from bytes, so one server can hand a
// prompt's computed KV rows to another (disaggregated prefill and decode, package kvtransfer).
// A block's bytes are, layer by layer, its BlockSize K rows then its BlockSize V rows, each row
// as the pool stores it: f32 values little-endian, or the bytes of a quantized row format
// (kernels.KVFormat, scales included). Two pools exchange blocks only when their BlockLayout is
// equal.
package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// BlockLayout describes the bytes of one block; two pools whose layouts are equal can exchange
// blocks.
type BlockLayout struct {
	Layers    int
	BlockSize int    // token slots per block
	KRowBytes int    // one token's K row in one layer
	VRowBytes int    // one token's V row in one layer (0: multi-head latent attention)
	DType     string // the cache's type (kernels.KVDType's name)
}

// BlockBytes is the size of one block over all layers.
func (l BlockLayout) BlockBytes() int { return l.Layers * l.BlockSize * (l.KRowBytes + l.VRowBytes) }

// String names the layout in errors.
func (l BlockLayout) String() string {
	return fmt.Sprintf("%d layers x %d tokens, K %d B + V %d B per row, %s", l.Layers, l.BlockSize, l.KRowBytes, l.VRowBytes, l.DType)
}

// ErrBlockGroups is returned for a pool split into KV groups (windowed layers): its blocks are
// not whole-model blocks and are not exchanged.
var ErrBlockGroups = errors.New("model: a KV pool with several KV groups (windowed layers) cannot copy blocks")

// BlockLayout returns kv's block layout, or ErrBlockGroups.
func (kv *PagedKV) BlockLayout() (BlockLayout, error) {
	if len(kv.GroupBlocks) > 1 {
		return BlockLayout{}, ErrBlockGroups
	}
	l := BlockLayout{Layers: len(kv.K), BlockSize: kv.BlockSize, DType: kv.KFmt.Type.String()}
	if kv.KQ == nil {
		l.KRowBytes, l.VRowBytes = kv.KVDim*4, kv.VDim*4
	} else {
		l.KRowBytes, l.VRowBytes = kv.KFmt.RowBytes, kv.VFmt.RowBytes
	}
	return l, nil
}

// checkBlock validates block id b.
func (kv *PagedKV) checkBlock(b int) (BlockLayout, error) {
	l, err := kv.BlockLayout()
	if err != nil {
		return l, err
	}
	if b < 0 || b >= kv.NumBlocks {
		return l, fmt.Errorf("model: block %d outside the pool of %d blocks", b, kv.NumBlocks)
	}
	return l, nil
}

// ReadBlock appends block b's rows to dst (the layout of the file comment).
func (kv *PagedKV) ReadBlock(dst []byte, b int) ([]byte, error) {
	l, err := kv.checkBlock(b)
	if err != nil {
		return dst, err
	}
	bs := kv.BlockSize
	for layer := range l.Layers {
		if kv.KQ == nil {
			dst = appendF32(dst, kv.K[layer][b*bs*kv.KVDim:(b+1)*bs*kv.KVDim])
			dst = appendF32(dst, kv.V[layer][b*bs*kv.VDim:(b+1)*bs*kv.VDim])
			continue
		}
		dst = append(dst, kv.KQ[layer][b*bs*l.KRowBytes:(b+1)*bs*l.KRowBytes]...)
		dst = append(dst, kv.VQ[layer][b*bs*l.VRowBytes:(b+1)*bs*l.VRowBytes]...)
	}
	return dst, nil
}

// WriteBlock sets block b's rows from src, which must be exactly one block of kv's layout.
func (kv *PagedKV) WriteBlock(b int, src []byte) error {
	l, err := kv.checkBlock(b)
	if err != nil {
		return err
	}
	if len(src) != l.BlockBytes() {
		return fmt.Errorf("model: block of %d bytes, want %d (%v)", len(src), l.BlockBytes(), l)
	}
	bs := kv.BlockSize
	kb, vb := bs*l.KRowBytes, bs*l.VRowBytes
	for layer := range l.Layers {
		ks, vs := src[:kb], src[kb:kb+vb]
		src = src[kb+vb:]
		if kv.KQ == nil {
			readF32(kv.K[layer][b*bs*kv.KVDim:(b+1)*bs*kv.KVDim], ks)
			readF32(kv.V[layer][b*bs*kv.VDim:(b+1)*bs*kv.VDim], vs)
			continue
		}
		copy(kv.KQ[layer][b*kb:(b+1)*kb], ks)
		copy(kv.VQ[layer][b*vb:(b+1)*vb], vs)
	}
	return nil
}

func appendF32(dst []byte, src []float32) []byte {
	for _, v := range src {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

func readF32(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}
