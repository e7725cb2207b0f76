// Tests of Loader over known token streams: window contents and the one-token shift, shard
// boundaries, wrap-around and epochs, rank striding, SetPosition, refusals.
package data

import (
	"slices"
	"strings"
	"testing"
)

func TestLoaderWindows(t *testing.T) {
	// 1000 tokens i (uint32 shards: vocab > 65536), shards of 97 tokens so windows cross them
	const n = 1000
	for _, vocab := range []int{70000, 1000} {
		d, err := Open(writeStream(t, vocab, 97, iota(n, vocab), iota(10, vocab)), "train")
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if d.Len() != n {
			t.Fatalf("Len %d, want %d", d.Len(), n)
		}
		const B, T = 3, 7 // 21 tokens per batch: (1000-1)/21 = 47 windows
		l, err := NewLoader(d, B, T, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if l.Windows() != 47 {
			t.Fatalf("Windows %d, want 47", l.Windows())
		}
		x, y := make([]int32, B*T), make([]int32, B*T)
		for step := range 2*47 + 3 {
			if l.Epoch() != step/47 || l.Position() != int64(step) {
				t.Fatalf("step %d: epoch %d position %d", step, l.Epoch(), l.Position())
			}
			l.Next(x, y)
			w := step % 47
			for i := range B * T {
				if x[i] != int32(w*B*T+i) || y[i] != x[i]+1 {
					t.Fatalf("vocab %d step %d: x[%d]=%d y[%d]=%d, want %d and %d", vocab, step, i, x[i], i, y[i], w*B*T+i, w*B*T+i+1)
				}
			}
		}
	}
}

func TestLoaderRanksAndResume(t *testing.T) {
	const n, B, T, world = 5000, 2, 16, 3
	d, err := Open(writeStream(t, 60000, 1000, iota(n, 60000), iota(5, 60000)), "train")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	total := (n - 1) / (B * T) // 156 windows, 52 per rank
	seen := map[int32]int{}
	x, y := make([]int32, B*T), make([]int32, B*T)
	for rank := range world {
		l, err := NewLoader(d, B, T, rank, world)
		if err != nil {
			t.Fatal(err)
		}
		if l.Windows() != int64(total/world) {
			t.Fatalf("rank %d: Windows %d, want %d", rank, l.Windows(), total/world)
		}
		for i := range l.Windows() {
			l.Next(x, y)
			if want := (i*world + int64(rank)) * B * T; int64(x[0]) != want {
				t.Fatalf("rank %d batch %d starts at %d, want %d", rank, i, x[0], want)
			}
			seen[x[0]]++
		}
		if l.Epoch() != 1 {
			t.Errorf("rank %d: epoch %d after one pass", rank, l.Epoch())
		}
	}
	if len(seen) != total/world*world {
		t.Errorf("%d distinct windows over all ranks, want %d", len(seen), total/world*world)
	}
	for w, c := range seen {
		if c != 1 {
			t.Errorf("window at %d taken %d times", w, c)
		}
	}

	// resume: a fresh loader moved to a saved position continues the same sequence
	a, _ := NewLoader(d, B, T, 1, world)
	for range 70 { // past one epoch
		a.Next(x, y)
	}
	pos := a.Position()
	var want [][]int32
	for range 40 {
		a.Next(x, y)
		want = append(want, slices.Clone(x), slices.Clone(y))
	}
	b, _ := NewLoader(d, B, T, 1, world)
	if err := b.SetPosition(pos); err != nil {
		t.Fatal(err)
	}
	if b.Epoch() != 1 {
		t.Errorf("epoch %d after SetPosition(%d)", b.Epoch(), pos)
	}
	for i := range 40 {
		b.Next(x, y)
		if !slices.Equal(x, want[2*i]) || !slices.Equal(y, want[2*i+1]) {
			t.Fatalf("batch %d after resume differs", i)
		}
	}
	if err := b.SetPosition(-1); err == nil {
		t.Error("SetPosition(-1) accepted")
	}
}

func TestLoaderRefusals(t *testing.T) {
	d, err := Open(writeStream(t, 100, 50, iota(100, 100), iota(3, 100)), "train")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, c := range []struct {
		b, t, rank, world int
		want              string
	}{
		{0, 4, 0, 1, "positive"}, {2, -1, 0, 1, "positive"}, {2, 4, 1, 1, "rank"}, {2, 4, 0, 0, "rank"},
		{2, 4, -1, 2, "rank"}, {10, 10, 0, 1, "need at least 101"}, {5, 5, 0, 4, "need at least 101"},
	} {
		if _, err := NewLoader(d, c.b, c.t, c.rank, c.world); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewLoader(%d,%d,%d,%d): %v, want %q", c.b, c.t, c.rank, c.world, err, c.want)
		}
	}
	// exactly enough: 99 tokens after the first make 99/(3*33) = 1 window
	if l, err := NewLoader(d, 3, 33, 0, 1); err != nil || l.Windows() != 1 {
		t.Errorf("3x33 on 100 tokens: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Next with short x did not panic")
		}
	}()
	l, _ := NewLoader(d, 2, 2, 0, 1)
	l.Next(make([]int32, 3), make([]int32, 4))
}
