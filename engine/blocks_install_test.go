package engine

import (
	"errors"
	"slices"
	"testing"
)

// TestInstallCached: installed blocks are prefix hits for the prompt (and not for another
// salt), unreferenced and free; the last token's block is never installed; a full pool takes
// only what it can without evicting its own installs; a failed write leaves the block free and
// uncached; blocks already cached are not written again.
func TestInstallCached(t *testing.T) {
	toks := make([]int, 18) // 4 full blocks of 4 and 2 tokens
	for i := range toks {
		toks[i] = i + 1
	}
	m := NewBlockManager(8, 4, true)
	var wrote []int
	write := func(b BlockID, i int) error { wrote = append(wrote, i); return nil }
	n, err := m.InstallCached(toks[:16], "", 10, write)
	if err != nil || n != 3 || !slices.Equal(wrote, []int{0, 1, 2}) {
		t.Fatalf("16 tokens: installed %d (wrote %v), %v; want 3: the last token's block stays", n, wrote, err)
	}
	if err := m.checkEmpty(); err != nil {
		t.Fatal(err)
	}
	if got, hit := m.GetComputedBlocks(toks, ""); len(got) != 3 || hit != 12 {
		t.Fatalf("lookup after install: %v, %d tokens", got, hit)
	}
	if got, _ := m.GetComputedBlocks(toks, "salt"); len(got) != 0 {
		t.Fatalf("another salt hits %v", got)
	}
	wrote = nil
	if n, err := m.InstallCached(toks, "", 4, write); err != nil || n != 4 || !slices.Equal(wrote, []int{3}) {
		t.Fatalf("again with 18 tokens: %d, wrote %v, %v; want only block 3 written", n, wrote, err)
	}

	small := NewBlockManager(2, 4, true)
	wrote = nil
	if n, err := small.InstallCached(toks, "", 4, write); err != nil || n != 2 || !slices.Equal(wrote, []int{0, 1}) {
		t.Fatalf("2-block pool: %d, wrote %v, %v", n, wrote, err)
	}
	if got, _ := small.GetComputedBlocks(toks, ""); len(got) != 2 {
		t.Fatalf("2-block pool lookup: %v", got)
	}

	bad := NewBlockManager(4, 4, true)
	boom := errors.New("boom")
	n, err = bad.InstallCached(toks, "", 4, func(b BlockID, i int) error {
		if i == 1 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 1 {
		t.Fatalf("failed write: %d, %v", n, err)
	}
	if err := bad.checkEmpty(); err != nil || bad.NumCachedBlocks() != 1 {
		t.Fatalf("after a failed write: %v, %d cached", err, bad.NumCachedBlocks())
	}
	if _, err := NewBlockManager(4, 4, false).InstallCached(toks, "", 4, write); err == nil {
		t.Error("installed without prefix caching")
	}
}
