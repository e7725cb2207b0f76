// This file connects the paged-attention kernels to the KV cache formats of kvcache.go: a
// layer's pools as KVLayer, and kvSrc, one pool seen from one KV head, which hands the
// kernels a segment of consecutive pool rows as f32 rows: the pool itself when it is f32,
// else the segment dequantized into a scratch of at most AttnBlock rows of one head (L1
// sized; the cache is never copied whole). The kernels then run exactly as on an f32 pool
// holding the dequantized values, so a quantized cache keeps batch invariance and matches
// the f32 kernels on the dequantized cache bit for bit.
package kernels

import (
	"fmt"
	"sync"
)

// KVLayer is one layer's K and V pools: f32 rows K, V when Fmt.Type is KVF32 (or Fmt is the
// zero value), else byte rows KQ, VQ in Fmt. V (VQ) may be empty for MLA's latent cache.
type KVLayer struct {
	K, V   []float32
	KQ, VQ []byte
	Fmt    KVFormat
}

func (kv KVLayer) quantized() bool { return kv.Fmt.Type != KVF32 }

// poolRows is how many rows of width kvd both pools hold.
func (kv KVLayer) poolRows(kvd int) (int, error) {
	if !kv.quantized() {
		if kvd <= 0 {
			return 0, nil
		}
		return min(len(kv.K), len(kv.V)) / kvd, nil
	}
	if kv.Fmt.Width != kvd || kv.Fmt.RowBytes <= 0 {
		return 0, fmt.Errorf("paged attention: %s rows of %d values, the heads need %d", kv.Fmt.Type, kv.Fmt.Width, kvd)
	}
	return min(len(kv.KQ), len(kv.VQ)) / kv.Fmt.RowBytes, nil
}

// kvSrc is one pool from one KV head at element off of every row.
type kvSrc struct {
	f32 []float32 // f32 pool, starting at the head's offset
	q   []byte    // quantized pool (f32 nil)
	fm  KVFormat
	off int
	buf []float32 // scratch of quantized segments
}

// at points s at pool f32 (or q in fm) from element off.
func (s *kvSrc) at(f32 []float32, q []byte, fm KVFormat, off int) {
	if fm.Type == KVF32 {
		s.f32, s.q = f32[off:], nil
		return
	}
	s.f32, s.q, s.fm, s.off = nil, q, fm, off
}

// seg returns pool rows r0..r0+n-1 of the head (hd wide) and their stride.
func (s *kvSrc) seg(r0, n, stride, hd int) ([]float32, int) {
	if s.q == nil {
		return s.f32[r0*stride : (r0+n-1)*stride+hd], stride
	}
	b := s.buf[:n*hd]
	s.fm.LoadRows(b, s.q, r0, n, s.off, hd)
	return b, hd
}

var kvScratch sync.Pool

func getKVScratch(n int) *[]float32 {
	if sp, ok := kvScratch.Get().(*[]float32); ok && cap(*sp) >= n {
		*sp = (*sp)[:n]
		return sp
	}
	s := make([]float32, n)
	return &s
}
