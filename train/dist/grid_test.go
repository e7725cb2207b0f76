package dist

import (
	"slices"
	"testing"
)

func TestGridMegatronOrder(t *testing.T) {
	g, err := NewGrid(8, 2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	// rank = pp·(DP·TP) + dp·TP + tp
	for r := range 8 {
		c := g.Coord(r)
		if g.Rank(c) != r || c.PP*4+c.DP*2+c.TP != r {
			t.Fatalf("rank %d -> %+v -> %d", r, c, g.Rank(c))
		}
	}
	if got, want := g.TPGroups(), [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}; !equal(got, want) {
		t.Errorf("TP groups %v, want %v", got, want)
	}
	if got, want := g.DPGroups(), [][]int{{0, 2}, {1, 3}, {4, 6}, {5, 7}}; !equal(got, want) {
		t.Errorf("DP groups %v, want %v", got, want)
	}
	if got, want := g.PPGroups(), [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}; !equal(got, want) {
		t.Errorf("PP groups %v, want %v", got, want)
	}
	if got, want := g.EmbeddingGroups(), [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}; !equal(got, want) {
		t.Errorf("embedding groups %v, want %v", got, want)
	}
}

func TestGridEveryRankInOneGroupOfEachKind(t *testing.T) {
	for _, s := range []Grid{{4, 1, 1}, {1, 4, 1}, {1, 1, 4}, {2, 3, 2}, {3, 1, 2}} {
		g, err := NewGrid(s.World(), s.DP, s.TP, s.PP)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range [][][]int{g.TPGroups(), g.DPGroups(), g.PPGroups()} {
			seen := map[int]int{}
			for _, grp := range kind {
				for _, r := range grp {
					seen[r]++
				}
			}
			if len(seen) != g.World() {
				t.Fatalf("%v: groups %v cover %d ranks", g, kind, len(seen))
			}
			for r, n := range seen {
				if n != 1 {
					t.Fatalf("%v: rank %d in %d groups of %v", g, r, n, kind)
				}
			}
		}
	}
}

func TestNewGridDefaultsAndErrors(t *testing.T) {
	g, err := NewGrid(8, 0, 2, 1)
	if err != nil || g != (Grid{DP: 4, TP: 2, PP: 1}) {
		t.Fatalf("NewGrid(8, 0, 2, 1) = %+v, %v", g, err)
	}
	for _, c := range []struct{ world, dp, tp, pp int }{
		{0, 1, 1, 1}, {4, 3, 1, 1}, {6, 0, 4, 1}, {4, -1, 1, 1}, {4, 2, 2, 2},
	} {
		if g, err := NewGrid(c.world, c.dp, c.tp, c.pp); err == nil {
			t.Errorf("NewGrid(%v) = %+v, want an error", c, g)
		}
	}
}

func equal(a, b [][]int) bool { return slices.EqualFunc(a, b, slices.Equal) }
