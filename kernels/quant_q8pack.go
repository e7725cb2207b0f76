// This file keeps Q8_0 and Q4_0 weights repacked once for the AVX2 prefill tiles: Q8_0 for
// quant_quads8x.go (per row and quad of blocks b..b+3, the four scales converted to float32,
// then the 128 values regrouped into four 32-byte registers, register g holding values
// x4Elem(g, 0..7) of each block: 144 bytes per quad where the GGUF rows take 136), Q4_0 for
// quant_quads4p.go (the four scales as float32, then the nibble bytes in the X4 tiles' register
// order: 80 bytes for 72). The tiles then load each register once, with no per-row regrouping
// or fp16 conversion. Packs are registered by PrepackQ8 (the model calls it at load when the
// copies fit its memory budget) and found by the weight's data address; they are made on the
// first matmul with two or more tokens (or the first batch-invariant one) and used by every
// later one, so a weight's results do not depend on m. Decode (m = 1, not invariant) keeps
// reading the stored rows.
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

// q8Pack is a Q8_0 or Q4_0 weight [n, k] (k a multiple of 128) in the packed layout: row r at
// w[r*(k/128)*Q:], Q = q8PackQuad or q4PackQuad.
type q8Pack struct {
	w []byte
}

// newQ8Pack repacks the Q8_0 (Q4_0 if q4) weight [n, k] stored in data, its rows split over p.
func newQ8Pack(p *Pool, data []byte, q4 bool, n, k int) *q8Pack {
	nq := k / 128
	pq, sq, pack := q8PackQuad, 136, packQ8Row
	if q4 {
		pq, sq, pack = q4PackQuad, 72, packQ4Row
	}
	pk := &q8Pack{w: make([]byte, n*nq*pq)}
	p.For(n, 16, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			pack(pk.w[r*nq*pq:(r+1)*nq*pq], data[r*nq*sq:(r+1)*nq*sq])
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
	q4   bool   // Q4_0 (else Q8_0)
	n, k int
	refs int // PrepackQ8 calls not yet dropped (under q8Reg)
	once sync.Once
	pack *q8Pack
	// The 16-row pack of a Q4_0 weight for the VNNI tiles (quant_vnni_i16.go), made on first use.
	onceI sync.Once
	packI []byte
	// The 16-row pack of a Q8_0 weight for the AMX tiles (quant_amx.go), made on first use.
	onceA sync.Once
	packA []byte
}

// q8Packs maps registered weights' data addresses (uintptr) to their *q8Entry.
var q8Packs sync.Map

// PrepackQ8 registers the Q8_0 or Q4_0 weight w ([n, k], k a multiple of 128) for the packed
// prefill tiles: the first matmul of w with two or more tokens (or batch-invariant) repacks it
// once (a copy of about its size) and every later one reads the pack. w's data must not change
// until DropPackQ8(w). Returns whether w was registered (on AVX2 without AVX-512 VNNI; with
// VNNI Q4_0 weights only, for the 16-row tiles of quant_vnni_i16.go, k a multiple of 32, and
// with AMX-INT8 Q8_0 ones too, for the AMX tiles of quant_amx.go).
func PrepackQ8(w *tensor.Tensor) bool {
	q4 := w.Type == tensor.Q4_0
	if !quantAsm || !littleEndian || (w.Type != tensor.Q8_0 && !q4) || len(w.Shape) != 2 ||
		w.Shape[0] == 0 || w.Shape[1]%32 != 0 || len(w.Data) < packRowBytes(q4, w.Shape[1])*w.Shape[0] {
		return false
	}
	if quantVNNI && (!q4 || tilesI16[1] == nil) && (q4 || !amxOn()) || !quantVNNI && (w.Shape[1]%128 != 0 || packTiles(q4)[1] == nil) {
		return false
	}
	q8Reg.Lock()
	defer q8Reg.Unlock()
	v, _ := q8Packs.LoadOrStore(uintptr(unsafe.Pointer(&w.Data[0])), &q8Entry{data: w.Data, q4: q4, n: w.Shape[0], k: w.Shape[1]})
	v.(*q8Entry).refs++
	return true
}

// q8Reg serializes PrepackQ8 and DropPackQ8 (the entries' refs).
var q8Reg sync.Mutex

// packRowBytes is the bytes of a stored Q8_0 (Q4_0 if q4) row of k values.
func packRowBytes(q4 bool, k int) int {
	if q4 {
		return k / 32 * 18
	}
	return k / 32 * 34
}

// packTiles returns the packed tiles of Q8_0 (Q4_0 if q4).
func packTiles(q4 bool) *[9]tileFunc {
	if q4 {
		return &tilesQ4P
	}
	return &tilesQ8X
}

// DropPackQ8 undoes one PrepackQ8(w) (call it before w's data changes or is unmapped); the
// last one forgets the registration and the pack. Weights of two models sharing their data
// keep their pack until both are dropped.
func DropPackQ8(w *tensor.Tensor) {
	if len(w.Data) == 0 {
		return
	}
	q8Reg.Lock()
	defer q8Reg.Unlock()
	key := uintptr(unsafe.Pointer(&w.Data[0]))
	if v, ok := q8Packs.Load(key); ok {
		if e := v.(*q8Entry); e.refs <= 1 {
			q8Packs.Delete(key)
		} else {
			e.refs--
		}
	}
}

// q8PackFor returns the pack of the registered Q8_0 (Q4_0 if q4) weight whose data is w ([n,
// k]), making it on first use on p, or nil (not registered, another shape or type, or packs
// off).
func q8PackFor(p *Pool, w []byte, q4 bool, n, k int) *q8Pack {
	if (!q4 && q8xToks == 0) || (q4 && (x4Toks == 0 || !useQ4P)) || len(w) == 0 {
		return nil
	}
	v, ok := q8Packs.Load(uintptr(unsafe.Pointer(&w[0])))
	if !ok && packAllQ8 && len(w) >= n*packRowBytes(q4, k) {
		v, _ = q8Packs.LoadOrStore(uintptr(unsafe.Pointer(&w[0])), &q8Entry{data: w, q4: q4, n: n, k: k})
	} else if !ok {
		return nil
	}
	e := v.(*q8Entry)
	if e.n != n || e.k != k || e.q4 != q4 {
		return nil
	}
	e.once.Do(func() { e.pack = newQ8Pack(p, e.data, q4, n, k) })
	return e.pack
}

// packAllQ8 makes every Q8_0 and Q4_0 weight (k a multiple of 128) get a pack on first use, registered
// or not (tests run the generic matmul checks on the packed path; they clear q8Packs after).
var packAllQ8 = false

// useQ4P lets Q4_0 weights use their packs (benchmarks compare it with the X4 tiles on the
// stored rows).
var useQ4P = true

// packedQ8 returns the pack the GEMM paths use for a weight w ([n, k]; Q8_0 unless q4), or nil
// when they read the stored rows.
func packedQ8(p *Pool, w []byte, q4 bool, n, k int) *q8Pack {
	if quantVNNI || k%128 != 0 || packTiles(q4)[1] == nil {
		return nil
	}
	return q8PackFor(p, w, q4, n, k)
}

// packedI16 returns the 16-row pack the VNNI GEMM path uses for a Q4_0 weight w ([n, k]),
// making it on first use on p, or nil when it reads the stored rows (not registered, packs
// off, no VNNI).
func packedI16(p *Pool, w []byte, n, k int) []byte {
	if !quantVNNI || !useI16 || tilesI16[1] == nil || k%32 != 0 || len(w) == 0 {
		return nil
	}
	v, ok := q8Packs.Load(uintptr(unsafe.Pointer(&w[0])))
	if !ok && packAllQ8 && len(w) >= n*packRowBytes(true, k) {
		v, _ = q8Packs.LoadOrStore(uintptr(unsafe.Pointer(&w[0])), &q8Entry{data: w, q4: true, n: n, k: k})
	} else if !ok {
		return nil
	}
	e := v.(*q8Entry)
	if e.n != n || e.k != k || !e.q4 {
		return nil
	}
	e.onceI.Do(func() { e.packI = newI16Pack(p, e.data, n, k) })
	return e.packI
}

// matmulPacked runs out = x · wᵀ on the pack pk of a Q8_0 (Q4_0 if q4) weight.
func matmulPacked(p *Pool, out []float32, a *q8Acts, pk *q8Pack, q4 bool, m, n, k int) {
	if q4 {
		matmulQ4XP(p, out, a, pk, m, n, k)
	} else {
		matmulQ8X(p, out, a, pk, m, n, k)
	}
}

// packedItems returns matmulPacked's work items.
func packedItems(p *Pool, out []float32, a *q8Acts, pk *q8Pack, q4 bool, m, n, k int) (int, func(c int)) {
	if q4 {
		return q4pItems(p, out, a, pk, m, n, k)
	}
	return q8xItems(p, out, a, pk, m, n, k)
}
