// This file gives the attention ops the paged KV pool of a layer in the cache's format: the
// f32 rows of KV.K and KV.V, or byte rows (kernels/kvcache.go) that a row's k and v are
// quantized into as they are written and that the kernels dequantize as they read.
package exec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
)

// quantized reports whether the pool's rows are bytes rather than f32.
func (kv *KV) quantized() bool { return kv.KFmt.Type != kernels.KVF32 }

// layer returns layer l's pools for the attention kernels.
func (kv *KV) layer(l int) kernels.KVLayer {
	if !kv.quantized() {
		return kernels.KVLayer{K: kv.K[l], V: kv.V[l]}
	}
	return kernels.KVLayer{KQ: kv.KQ[l], VQ: kv.VQ[l], Fmt: kv.KFmt}
}

// poolRows is how many token rows layer l's K and V pools hold (kvd, vd: the rows' widths;
// vd 0: no V pool).
func (kv *KV) poolRows(l, kvd, vd int) (int, error) {
	if !kv.quantized() {
		n := len(kv.K[l]) / max(kvd, 1)
		if vd > 0 {
			n = min(n, len(kv.V[l])/vd)
		}
		return n, nil
	}
	if l >= len(kv.KQ) || l >= len(kv.VQ) {
		return 0, fmt.Errorf("layer %d: the %s KV pool has %d layers", l, kv.KFmt.Type, len(kv.KQ))
	}
	if kv.KFmt.Width != kvd || kv.VFmt.Width != vd {
		return 0, fmt.Errorf("layer %d: the %s KV pool has rows of %d+%d values, the op %d+%d", l, kv.KFmt.Type, kv.KFmt.Width, kv.VFmt.Width, kvd, vd)
	}
	n := len(kv.KQ[l]) / max(kv.KFmt.RowBytes, 1)
	if vd > 0 {
		n = min(n, len(kv.VQ[l])/max(kv.VFmt.RowBytes, 1))
	}
	return n, nil
}

// store writes a token's k (and v, unless vd is 0) into pool row r of layer l.
func (kv *KV) store(l, r int, k, v []float32) {
	if !kv.quantized() {
		copy(kv.K[l][r*len(k):(r+1)*len(k)], k)
		if len(v) > 0 {
			copy(kv.V[l][r*len(v):(r+1)*len(v)], v)
		}
		return
	}
	kv.KFmt.StoreRow(kv.KQ[l], r, k)
	if len(v) > 0 {
		kv.VFmt.StoreRow(kv.VQ[l], r, v)
	}
}
