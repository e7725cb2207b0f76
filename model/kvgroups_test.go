// Tests of KV groups in the batched forward: a Gemma 2 (window 5) whose local layers keep
// their KV in a pool of 4 blocks reused as a ring, with released (-1) entries before each
// row's window, gives bit for bit the logits of one pool for every layer; tables that do not
// fit the groups give errors, not panics.
package model_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
)

func TestKVGroupsForwardBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.gguf")
	if err := convert.WriteGGUF(path, gemma2Plan(t, 5), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	m := b.Model
	groups := m.KVGroups()
	if len(groups) != 2 || groups[0].Window != 5 || !slices.Equal(groups[0].Layers, []int{0, 2}) || groups[1].Window != 0 || !slices.Equal(groups[1].Layers, []int{1}) {
		t.Fatalf("groups %+v", groups)
	}
	const bs, n = 4, 30
	toks := make([]int, n)
	for i := range toks {
		toks[i] = (i*37 + 11) % m.Config.Vocab
	}
	one, err := m.NewPagedKV(8, bs)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := m.NewPagedKVGroups(groups, []int{4, 8}, bs)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2*(2*4+8)*bs*m.Config.KVDim()) * 4; kv.Bytes() != want {
		t.Errorf("pool of %d bytes, want %d", kv.Bytes(), want)
	}
	full := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	// local table for rows from start: ring blocks, -1 before the window of start
	local := func(start int) []int32 {
		tab := make([]int32, len(full))
		for i := range tab {
			tab[i] = int32(i % 4)
			if (i+1)*bs <= start-5+1 {
				tab[i] = -1
			}
		}
		return tab
	}
	var b1, b2 model.Batch
	step := func(start, k int) {
		t.Helper()
		want, err := m.ForwardBatch(&b1, one, []model.BatchSeq{{Tokens: toks[start : start+k], StartPos: start, BlockTable: full, NeedsLogits: true}})
		if err != nil {
			t.Fatal(err)
		}
		want = slices.Clone(want)
		got, err := m.ForwardBatch(&b2, kv, []model.BatchSeq{{Tokens: toks[start : start+k], StartPos: start, BlockTable: local(start),
			GroupTables: [][]int32{full}, NeedsLogits: true}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("positions %d..%d: KV groups and one pool differ", start, start+k-1)
		}
	}
	step(0, 9)
	for p := 9; p < n; p++ {
		step(p, 1)
	}
	// -1 inside the window, a block past the local pool, a missing group table: errors.
	bad := local(20)
	bad[len(bad)-4] = -1 // block of positions 16..19: inside the window of 20
	for name, s := range map[string]model.BatchSeq{
		"released inside the window": {Tokens: toks[20:21], StartPos: 20, BlockTable: bad, GroupTables: [][]int32{full}, NeedsLogits: true},
		"outside the pool":           {Tokens: toks[20:21], StartPos: 20, BlockTable: full, GroupTables: [][]int32{full}, NeedsLogits: true},
		"tables for":                 {Tokens: toks[20:21], StartPos: 20, BlockTable: local(20), NeedsLogits: true},
	} {
		_, err := m.ForwardBatch(&b2, kv, []model.BatchSeq{s})
		want := name
		if want != "tables for" {
			want = "outside the pool"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
