// This file keeps Q8_0 weights repacked once for the AVX2 prefill tiles of quant_quads8x.go:
// per row and quad of blocks b..b+3, the four scales converted to float32 (16 bytes), then the
// 128 values regrouped into four 32-byte registers, register g holding values x4Elem(g, 0..7)
// of each block (144 bytes per quad where the GGUF rows take 136). The tiles then load each
// register once, with no per-row regrouping or fp16 conversion. Packs are registered by
// PrepackQ8 (the model calls it at load when the copies fit its memory budget) and found by
// the weight's data address; they are made on the first matmul with two or more tokens (or
// the first batch-invariant one) and used by every later one, so a weight's results do not
// depend on m. Decode (m = 1, not invariant) keeps reading the stored rows.
package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// q8PackQuad is the bytes of one block quad of a packed row.
const q8PackQuad = 144

// q8Pack is a Q8_0 weight [n, k] (k a multiple of 128) in the packed layout: row r at
// w[r*(k/128)*q8PackQuad:].
type q8Pack struct {
	w []byte
}

// newQ8Pack repacks the Q8_0 weight [n, k] stored in data, its rows split over p.
func newQ8Pack(p *Pool, data []byte, n, k int) *q8Pack {
	nq := k / 128
	pk := &q8Pack{w: make([]byte, n*nq*q8PackQuad)}
	p.For(n, 16, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			packQ8Row(pk.w[r*nq*q8PackQuad:(r+1)*nq*q8PackQuad], data[r*nq*136:(r+1)*nq*136])
		}
	})
	return pk
}

// packQ8Row writes one row's GGUF Q8_0 blocks src (34 bytes each, a multiple of 4 blocks) in
// the packed layout to dst.
func packQ8Row(dst, src []byte) {
	le := binary.LittleEndian
	for q := 0; q < len(src)/136; q++ {
		rec, blks := dst[q*q8PackQuad:(q+1)*q8PackQuad], src[q*136:(q+1)*136]
		for j := 0; j < 4; j++ {
			le.PutUint32(rec[4*j:], math.Float32bits(f16(blks[34*j:])))
			v, o := blks[34*j+2:34*j+34], rec[16+8*j:]
			le.PutUint64(o[0:], le.Uint64(v[0:])) // register g at 32g holds values x4Elem(g, 0..7)
			le.PutUint64(o[32:], le.Uint64(v[16:]))
			le.PutUint64(o[64:], le.Uint64(v[8:]))
			le.PutUint64(o[96:], le.Uint64(v[24:]))
		}
	}
}

// q8Entry is a registered weight: its pack is made on first use.
type q8Entry struct {
	data []byte // the stored weight (held, so its address is not reused while registered)
	n, k int
	once sync.Once
	pack *q8Pack
}

// q8Packs maps registered weights' data addresses (uintptr) to their *q8Entry.
var q8Packs sync.Map

// PrepackQ8 registers the Q8_0 weight w ([n, k], k a multiple of 128) for the packed prefill
// tiles: the first matmul of w with two or more tokens (or batch-invariant) repacks it once (a
// copy of about its size) and every later one reads the pack. w's data must not change until
// DropPackQ8(w). Returns whether w was registered (AVX2 without AVX-512 VNNI only).
func PrepackQ8(w *tensor.Tensor) bool {
	if !quantAsm || quantVNNI || tilesQ8X[1] == nil || !littleEndian || w.Type != tensor.Q8_0 ||
		len(w.Shape) != 2 || w.Shape[1]%128 != 0 || w.Shape[0] == 0 || len(w.Data) < w.Shape[0]*w.Shape[1]/32*34 {
		return false
	}
	q8Packs.LoadOrStore(uintptr(unsafe.Pointer(&w.Data[0])), &q8Entry{data: w.Data, n: w.Shape[0], k: w.Shape[1]})
	return true
}

// DropPackQ8 forgets w's registration and pack (call it before w's data changes or is
// unmapped).
func DropPackQ8(w *tensor.Tensor) {
	if len(w.Data) > 0 {
		q8Packs.Delete(uintptr(unsafe.Pointer(&w.Data[0])))
	}
}

// q8PackFor returns the pack of the registered Q8_0 weight whose data is w ([n, k]), making
// it on first use on p, or nil (not registered, another shape, or packs off).
func q8PackFor(p *Pool, w []byte, n, k int) *q8Pack {
	if q8xToks == 0 || len(w) == 0 {
		return nil
	}
	v, ok := q8Packs.Load(uintptr(unsafe.Pointer(&w[0])))
	if !ok && packAllQ8 && len(w) >= n*k/32*34 {
		v, _ = q8Packs.LoadOrStore(uintptr(unsafe.Pointer(&w[0])), &q8Entry{data: w, n: n, k: k})
	} else if !ok {
		return nil
	}
	e := v.(*q8Entry)
	if e.n != n || e.k != k {
		return nil
	}
	e.once.Do(func() { e.pack = newQ8Pack(p, e.data, n, k) })
	return e.pack
}

// packAllQ8 makes every Q8_0 weight (k a multiple of 128) get a pack on first use, registered
// or not (tests run the generic matmul checks on the packed path; they clear q8Packs after).
var packAllQ8 = false

// packedQ8 returns the pack the GEMM paths use for a weight w ([n, k]; Q8_0 unless q4), or nil
// when they read the stored rows.
func packedQ8(p *Pool, w []byte, q4 bool, n, k int) *q8Pack {
	if q4 || quantVNNI || k%128 != 0 || tilesQ8X[1] == nil {
		return nil
	}
	return q8PackFor(p, w, n, k)
}
