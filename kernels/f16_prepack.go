// This file keeps F16 weights repacked once into the panel layout of the broadcast kernels
// (f16_bcast.go: panels of 16 rows, for each column the 16 rows' values side by side, k block
// after k block), so that prefill GEMMs of any m stream contiguous panels without copying
// weights per call and without horizontal sums. Packs are made by PrepackF16 (the model calls
// it at load) and found by the weight's data address. See docs/kernels-float.md.
package kernels

import (
	"sync"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// f16Pack is an F16 weight [n, k] in the panel layout of packBcast: for the k block at column
// k0 (bcKC columns, kb wide), panel j (rows 16j..16j+15, rows past n zero) at
// w[np*16*k0 + j*16*kb:], for each column the 16 rows' values.
type f16Pack struct {
	w    []uint16
	n, k int
}

// newF16Pack repacks the F16 weight [n, k] in data, its panels split over p.
func newF16Pack(p *Pool, data []byte, n, k int) *f16Pack {
	np := bcPanels(n)
	pw := &f16Pack{w: make([]uint16, np*16*k), n: n, k: k}
	w := f16Words(data, n, k)
	p.For(np, max(1, (256<<10)/(32*k)), func(lo, hi int) { packBcast(pw.w, w, n, k, lo, hi) })
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

// PrepackF16 registers the F16 weight w ([n, k]) for the F16 GEMM's panel layout: the
// first MatMul / MatMulShared of w with two or more rows (or MatMulInvariant with any) repacks
// it once (a copy of its bytes) and every later one streams the pack through the broadcast
// kernels (f16_bcast.go: each output one chain of FMAs over k, so other bits than the stored
// rows' dot-product kernels give). MatMul with one row (decode) keeps reading the stored rows.
// w's data must not change until DropPackF16(w).
// Returns whether w was registered (F16 matrices on the AVX2 and AVX-512 families: bcastRows
// runs either's kernels, with the same bits).
func PrepackF16(w *tensor.Tensor) bool {
	if !useFloatAsm || !littleEndian || w.Type != tensor.F16 || len(w.Shape) != 2 ||
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
	e := f16EntryOf(w)
	if e == nil {
		return nil
	}
	e.once.Do(func() { e.pack = newF16Pack(p, w.Data, e.n, e.k) })
	return e.pack
}

// f16EntryOf returns the registration of w if usePacks is on and w's data and shape are those
// registered, else nil.
func f16EntryOf(w *tensor.Tensor) *f16Entry {
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
	return e
}

// f16Packed reports whether the F16 GEMM of w runs on its pack (f16PackOf is not nil). The
// AVX-512 family uses gemmF16Items only then (its dot-product tiles otherwise).
func f16Packed(w *tensor.Tensor) bool { return f16EntryOf(w) != nil }

// usePacks makes the F16 GEMM use the packs (benchmarks compare it with the stored rows).
var usePacks = true

// packItems sets the item size of a job on a pack: for m <= gemmDirectMaxM about eight items
// per worker, 16–64 rows and at least ~1 MFLOP each (an item on a pack costs little more than
// its FLOPs, and smaller items leave less idle time at the end of the op when one worker
// started late or was slowed); always whole panels of 16 rows.
func (j *f16Job) packItems(p *Pool, m, k int) {
	if j.pack == nil {
		return
	}
	if m <= gemmDirectMaxM && packFineItems {
		lo := min(64, 4*max(4, (1<<20)/(2*4*m*k)))
		r := (j.n + 8*p.Workers() - 1) / (8 * p.Workers())
		j.rows = max(lo, min(64, (r+3)&^3))
	}
	if useAVX512 { // whole groups of the AVX-512 kernels' panels
		g := 16 * bzGroupPanels(m)
		j.rows = (j.rows + g - 1) / g * g
		return
	}
	j.rows = (j.rows + 15) &^ 15
}

// packFineItems enables packItems' small items (benchmarks compare it with gemmDirectF16's
// item sizes).
var packFineItems = true
