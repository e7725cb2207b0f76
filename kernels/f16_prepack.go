// This file keeps F16 weights repacked once into the AVX2 F16 GEMM's block layout (groups of
// 4 rows interleaved per 8 columns, k block after k block), so that prefill GEMMs of any m
// stream contiguous weight blocks through the packed-tile micro-kernel without copying them
// per call (gemmStream's per-block packW4) and without reading 4 rows strided by the row
// length (gemmDirectF16). The kernel calls and their order are those of gemmStream, so the
// results are the same bits. Packs are made by PrepackF16 (the model calls it at load) and
// found by the weight's data address. See docs/kernels-float.md.
package kernels

import (
	"sync"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// f16Pack is an F16 weight [n, k] in the block layout: for the k block at column k0 (gemmKC
// columns of the kv = k&^7 vector columns, kb wide), the nf = n&^3 rows of the full groups of
// 4, the group of rows r..r+3 at w[nf*k0+r*kb:], its kb columns interleaved per 8 columns
// (packW4's layout). Rows [nf, n) and columns [kv, k) stay in the stored weight only.
type f16Pack struct {
	w    []uint16
	n, k int
	g4   bool // the old layout (groups of 4); else f16_bcast.go's panels
}

// packG4 makes new packs in the old layout (benchmarks compare the two).
var packG4 = false

// newF16Pack repacks the F16 weight [n, k] in data, its groups of rows split over p.
func newF16Pack(p *Pool, data []byte, n, k int) *f16Pack {
	if !packG4 {
		np := bcPanels(n)
		pw := &f16Pack{w: make([]uint16, np*16*k), n: n, k: k}
		w := f16Words(data, n, k)
		p.For(np, max(1, (256<<10)/(32*k)), func(lo, hi int) { packBcast(pw.w, w, n, k, lo, hi) })
		return pw
	}
	kv, nf := k&^7, n&^3
	pw := &f16Pack{w: make([]uint16, nf*kv), n: n, k: k, g4: true}
	if nf == 0 || kv == 0 {
		return pw
	}
	w := f16Words(data, n, k)
	p.For(nf/4, max(1, (256<<10)/(8*k)), func(lo, hi int) {
		for k0 := 0; k0 < kv; k0 += gemmKC {
			packGroups4(pw.w[nf*k0+4*lo*min(gemmKC, kv-k0):], w, 4*lo, 4*hi, k, k0, min(gemmKC, kv-k0))
		}
	})
	return pw
}

// f16Entry is a registered weight: its pack is made on the first GEMM (m >= 2) that uses it.
type f16Entry struct {
	data uintptr // the weight's data address and shape when registered
	n, k int
	once sync.Once
	pack *f16Pack
}

// f16Packs maps registered weights (*tensor.Tensor) to their entries. The map holds the
// tensor, so its address cannot be reused by another tensor while the entry exists.
var f16Packs sync.Map

// PrepackF16 registers the F16 weight w ([n, k]) for the AVX2 F16 GEMM's block layout: the
// first MatMul / MatMulShared of w with two or more rows repacks it once (a copy of its bytes)
// and every later one streams the pack (same results, bit for bit). Single-row matmuls
// (decode) keep reading the stored rows. w's data must not change until DropPackF16(w).
// Returns whether w was registered (F16 matrices on the AVX2 family only).
func PrepackF16(w *tensor.Tensor) bool {
	if !useFloatAsm || useAVX512 || !littleEndian || w.Type != tensor.F16 || len(w.Shape) != 2 ||
		w.Shape[0] < 4 || w.Shape[1] < 8 || len(w.Data) < 2*w.Shape[0]*w.Shape[1] {
		return false
	}
	f16Packs.LoadOrStore(w, &f16Entry{data: uintptr(unsafe.Pointer(&w.Data[0])), n: w.Shape[0], k: w.Shape[1]})
	return true
}

// DropPackF16 forgets w's registration and pack (call it before w's data changes or is
// unmapped).
func DropPackF16(w *tensor.Tensor) { f16Packs.Delete(w) }

// f16PackOf returns the pack of the registered weight w (making it on first use, on p), or
// nil if w is not registered, usePacks is off or w's data or shape changed since.
func f16PackOf(p *Pool, w *tensor.Tensor) *f16Pack {
	if !usePacks {
		return nil
	}
	v, ok := f16Packs.Load(w)
	if !ok {
		return nil
	}
	e := v.(*f16Entry)
	if len(w.Data) == 0 || e.data != uintptr(unsafe.Pointer(&w.Data[0])) || len(w.Shape) != 2 || e.n != w.Shape[0] || e.k != w.Shape[1] {
		return nil
	}
	e.once.Do(func() { e.pack = newF16Pack(p, w.Data, e.n, e.k) })
	return e.pack
}

// packedRows computes rows [r0, r1) of out = x · wᵀ like streamRows, with the weight blocks
// read from the pack pw instead of being copied per call.
func packedRows(out, x, pk []float32, pw *f16Pack, data []byte, m, n, k, r0, r1 int) {
	if !pw.g4 {
		bcastRows(out, x, pw, m, n, k, r0, r1)
		return
	}
	ts := &avx2Tiles
	kv := k &^ 7
	mt := (m + 2) / 3 * 3
	nf := n &^ 3
	w := f16Words(data, n, k)
	var tmp [12]float32
	for k0 := 0; k0 < kv; k0 += gemmKC {
		kb := min(gemmKC, kv-k0)
		acc := min(k0, 1)
		buf := pk[mt*k0:]
		blk := pw.w[nf*k0:]
		for nb0 := r0; nb0 < r1; nb0 += streamNB {
			nb1 := min(nb0+streamNB, r1)
			ne := min(nb1, nf) // end of the block's full groups
			for i0 := 0; i0 < mt; i0 += 3 {
				a := &buf[i0*kb]
				mr := min(3, m-i0)
				switch {
				case ne == nb0:
				case mr == 3 && packGroupLoop:
					gemmF16PP3xG(a, &blk[nb0*kb], kb, (ne-nb0)/4, &out[i0*n+nb0], 4*n, acc)
				case mr == 2 && packGroupLoop:
					gemmF16PP2xG(a, &blk[nb0*kb], kb, (ne-nb0)/4, &out[i0*n+nb0], 4*n, acc)
				case mr == 1 && packGroupLoop:
					gemmF16PP1xG(a, &blk[nb0*kb], kb, (ne-nb0)/4, &out[i0*n+nb0], acc)
				default:
					for r := nb0; r < ne; r += 4 {
						if mr < 3 {
							gemmF16PP3x4(a, &blk[r*kb], kb, &tmp[0], 16, 0)
							addTile(out[i0*n+r:], n, tmp[:], mr, 4, acc)
						} else {
							gemmF16PP3x4(a, &blk[r*kb], kb, &out[i0*n+r], 4*n, acc)
						}
					}
				}
				if ne < nb1 {
					ts.tile(tensor.F16, mr, nb1-ne, &x[i0*k+k0], 4*k, unsafe.Pointer(&w[ne*k+k0]), 2*k, kb, &out[i0*n+ne], 4*n, acc)
				}
			}
		}
	}
	addKTail(out, x, tensor.F16, data, m, n, k, kv, r0, r1)
}

// usePacks makes the F16 GEMM use the packs (benchmarks compare it with the stored rows).
var usePacks = true

// packGroupLoop makes packedRows run a tile over a block's groups in one kernel call
// (gemmF16PP3xG; benchmarks compare it with one call per group).
var packGroupLoop = true

// packItems sets the item size of a job on a pack for m <= gemmDirectMaxM: about eight items
// per worker, 16–64 rows and at least ~1 MFLOP each. An item on a pack costs little more than
// its FLOPs (no copy, the activation tiles re-read from L2), and smaller items leave less
// idle time at the end of the op when one worker started late or was slowed.
func (j *f16Job) packItems(p *Pool, m, k int) {
	if j.pack == nil || m > gemmDirectMaxM || !packFineItems {
		return
	}
	lo := min(64, 4*max(4, (1<<20)/(2*4*m*k)))
	r := (j.n + 8*p.Workers() - 1) / (8 * p.Workers())
	j.rows = max(lo, min(64, (r+3)&^3))
}

// packRows rounds a pack job's item size up to whole panels of 16 rows.
func (j *f16Job) packRows() {
	if j.pack != nil && !j.pack.g4 {
		j.rows = (j.rows + 15) &^ 15
	}
}

// packFineItems enables packItems (benchmarks compare it with gemmDirectF16's item sizes).
var packFineItems = true
