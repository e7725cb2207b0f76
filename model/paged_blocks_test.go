package model

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
)

// testPool builds a pool of 2 layers, 3 blocks of 4 slots, rows of 8 values, filled with a
// pattern from seed (typ f32: K and V; else the quantized rows' bytes).
func testPool(t *testing.T, typ kernels.KVDType, seed byte) *PagedKV {
	t.Helper()
	kv := &PagedKV{NumBlocks: 3, BlockSize: 4, KVDim: 8, VDim: 8}
	if typ != kernels.KVF32 {
		f, err := kernels.NewKVFormat(typ, 8, 8)
		if err != nil {
			t.Fatal(err)
		}
		kv.KFmt, kv.VFmt = f, f
	}
	for range 2 {
		kv.addLayer(12, false)
	}
	i := int(seed)
	for l := range 2 {
		if kv.KQ == nil {
			for j := range kv.K[l] {
				kv.K[l][j], kv.V[l][j] = float32(i)*0.5, -float32(i)
				i++
			}
			continue
		}
		for j := range kv.KQ[l] {
			kv.KQ[l][j], kv.VQ[l][j] = byte(i), byte(i*7)
			i++
		}
	}
	return kv
}

// TestPagedBlocksCopy: a block read from one pool and written into another block of another
// pool holds the same rows there (f32 and q8_0), the other blocks untouched; a block of the wrong
// size, an id outside the pool and a pool of several KV groups are errors.
func TestPagedBlocksCopy(t *testing.T) {
	for _, typ := range []kernels.KVDType{kernels.KVF32, kernels.KVQ8} {
		src, dst := testPool(t, typ, 1), testPool(t, typ, 100)
		l, err := src.BlockLayout()
		if err != nil {
			t.Fatal(err)
		}
		if l.BlockBytes() != 2*4*(l.KRowBytes+l.VRowBytes) || l.DType != typ.String() {
			t.Fatalf("%v: layout %v", typ, l)
		}
		b1, err := src.ReadBlock(nil, 1)
		if err != nil || len(b1) != l.BlockBytes() {
			t.Fatalf("%v: read %d bytes, %v", typ, len(b1), err)
		}
		before0, _ := dst.ReadBlock(nil, 0)
		if err := dst.WriteBlock(2, b1); err != nil {
			t.Fatal(err)
		}
		got, _ := dst.ReadBlock(nil, 2)
		after0, _ := dst.ReadBlock(nil, 0)
		if !bytes.Equal(got, b1) || !bytes.Equal(before0, after0) {
			t.Fatalf("%v: block 2 does not hold block 1's rows, or block 0 changed", typ)
		}
		if err := dst.WriteBlock(0, b1[:len(b1)-1]); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("%v: short block: %v", typ, err)
		}
		if _, err := dst.ReadBlock(nil, 3); err == nil {
			t.Errorf("%v: read block 3 of 3", typ)
		}
	}
	g := testPool(t, kernels.KVF32, 0)
	g.GroupBlocks = []int{3, 3}
	if _, err := g.ReadBlock(nil, 0); err != ErrBlockGroups {
		t.Errorf("KV groups: %v", err)
	}
}
