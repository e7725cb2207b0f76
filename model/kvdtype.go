// This file implements the KV cache's storage type (vLLM's --kv-cache-dtype): Model's
// KVCacheDType picks it for every cache made from the model afterwards (Cache and the paged
// pools of the serving engine), the formats of kernels/kvcache.go give a layer's K and V rows
// in bytes, and the cache sizes count those bytes.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
)

// KVFormats are the layouts of a token's K and V rows in one layer of a cache of type t: heads
// of HeadDim values, or for multi-head latent attention one K row of latent plus RoPE key
// (scales per 32 values of it) and no V.
func (c *Config) KVFormats(t kernels.KVDType) (k, v kernels.KVFormat, err error) {
	kd, vd := c.CacheDims()
	hd := c.HeadDim
	if c.KVLoraRank > 0 || hd <= 0 || kd%hd != 0 {
		hd = kd
	}
	if k, err = kernels.NewKVFormat(t, kd, max(hd, 1)); err != nil {
		return k, v, fmt.Errorf("model: KV cache %s: %w", t, err)
	}
	if vd == 0 {
		return k, kernels.KVFormat{Type: t}, nil
	}
	if v, err = kernels.NewKVFormat(t, vd, max(hd, 1)); err != nil {
		return k, v, fmt.Errorf("model: KV cache %s: %w", t, err)
	}
	return k, v, nil
}

// KVCacheBytesPerToken is the KV cache's bytes per token over all layers in type t, scales
// included.
func (c *Config) KVCacheBytesPerToken(t kernels.KVDType) int64 {
	k, v, err := c.KVFormats(t)
	if err != nil {
		return c.KVBytesPerToken(4)
	}
	return int64(c.Layers) * int64(k.RowBytes+v.RowBytes)
}

// KVBytesPerTokenCache is the bytes per token of m's caches (m.KVCacheDType): with tensor
// parallelism, of this rank's KV heads.
func (m *Model) KVBytesPerTokenCache() int64 {
	return m.cacheConfig().KVCacheBytesPerToken(m.KVCacheDType)
}

// SetKVCacheDType sets the type of m's caches made from now on.
func (m *Model) SetKVCacheDType(t kernels.KVDType) error {
	if _, _, err := m.Config.KVFormats(t); err != nil {
		return err
	}
	m.KVCacheDType = t
	return nil
}

// addLayer appends one layer of slots token rows to kv's pools (committed up front when
// commit is set).
func (kv *PagedKV) addLayer(slots int, commit bool) {
	if kv.KFmt.Type == kernels.KVF32 {
		if commit {
			kv.K, kv.V = append(kv.K, prefaulted(slots*kv.KVDim)), append(kv.V, prefaulted(slots*kv.VDim))
		} else {
			kv.K, kv.V = append(kv.K, make([]float32, slots*kv.KVDim)), append(kv.V, make([]float32, slots*kv.VDim))
		}
		return
	}
	kv.K, kv.V = append(kv.K, nil), append(kv.V, nil)
	nk, nv := slots*kv.KFmt.RowBytes, slots*kv.VFmt.RowBytes
	if commit {
		kv.KQ, kv.VQ = append(kv.KQ, prefaultedBytes(nk)), append(kv.VQ, prefaultedBytes(nv))
	} else {
		kv.KQ, kv.VQ = append(kv.KQ, make([]byte, nk)), append(kv.VQ, make([]byte, nv))
	}
}

// setFormats sets kv's row formats for type t of m.
func (kv *PagedKV) setFormats(m *Model, t kernels.KVDType) error {
	k, v, err := m.cacheConfig().KVFormats(t)
	if err != nil {
		return err
	}
	if t == kernels.KVF32 {
		k, v = kernels.KVFormat{}, kernels.KVFormat{}
	}
	kv.KFmt, kv.VFmt = k, v
	return nil
}

// rowBytes is a token's K plus V bytes in one layer.
func (kv *PagedKV) rowBytes() int64 {
	if kv.KFmt.Type == kernels.KVF32 {
		return int64(kv.KVDim+kv.VDim) * 4
	}
	return int64(kv.KFmt.RowBytes + kv.VFmt.RowBytes)
}

// prefaultedBytes is prefaulted for a byte pool.
func prefaultedBytes(n int) []byte {
	s := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		s[i] = 0
	}
	return s
}
