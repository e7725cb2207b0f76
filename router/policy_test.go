package router

import (
	"fmt"
	"strings"
	"testing"
)

func cands(urls ...string) []Candidate {
	out := make([]Candidate, len(urls))
	for i, u := range urls {
		out[i] = Candidate{URL: u}
	}
	return out
}

func TestRoundRobinCycles(t *testing.T) {
	p, _ := NewPolicy(RoundRobin)
	c := cands("a", "b", "c")
	var got []int
	for range 7 {
		d := p.Pick(Input{}, c)
		if d.Reason != ReasonRoundRobin {
			t.Fatalf("reason %q", d.Reason)
		}
		got = append(got, d.Index)
	}
	if fmt.Sprint(got) != "[0 1 2 0 1 2 0]" {
		t.Fatalf("order %v", got)
	}
}

func TestLeastLoad(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
		want  string
	}{
		{"inflight", []Candidate{{URL: "a", Inflight: 3}, {URL: "b", Inflight: 1}, {URL: "c", Inflight: 2}}, "b"},
		{"scraped running counts other clients", []Candidate{{URL: "a", Inflight: 1}, {URL: "b", Running: 5}}, "a"},
		{"waiting weighs twice", []Candidate{{URL: "a", Running: 3}, {URL: "b", Running: 1, Waiting: 2}}, "a"},
		{"kv usage breaks ties", []Candidate{{URL: "a", Inflight: 1, KVUsage: 0.9}, {URL: "b", Inflight: 1, KVUsage: 0.1}}, "b"},
		{"stale scrape below own count", []Candidate{{URL: "a", Inflight: 4, Running: 1}, {URL: "b", Inflight: 2, Running: 3}}, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for start := range 3 { // the answer does not depend on the rotation
				p := &leastLoad{next: uint64(start)}
				if d := p.Pick(Input{}, tc.cands); tc.cands[d.Index].URL != tc.want || d.Reason != ReasonLeastLoad {
					t.Fatalf("start %d: picked %s (%s), want %s", start, tc.cands[d.Index].URL, d.Reason, tc.want)
				}
			}
		})
	}
	// Ties rotate, so an idle cluster spreads requests.
	p, _ := NewPolicy(LeastLoad)
	seen := map[int]int{}
	for range 30 {
		seen[p.Pick(Input{}, cands("a", "b", "c")).Index]++
	}
	if len(seen) != 3 || seen[0] != 10 {
		t.Fatalf("ties not spread: %v", seen)
	}
}

func TestSessionAffinity(t *testing.T) {
	p, _ := NewPolicy(Session)
	four := cands("http://a", "http://b", "http://c", "http://d")
	owner := map[string]string{}
	per := map[string]int{}
	for i := range 2000 {
		key := fmt.Sprintf("user-%d", i)
		d := p.Pick(Input{SessionKey: key}, four)
		if d.Reason != ReasonAffinity {
			t.Fatalf("reason %q", d.Reason)
		}
		owner[key] = four[d.Index].URL
		per[four[d.Index].URL]++
		if again := p.Pick(Input{SessionKey: key}, four); again.Index != d.Index {
			t.Fatalf("%s moved without a change", key)
		}
	}
	for u, n := range per { // rendezvous hashing spreads evenly: 500 each, give or take
		if n < 400 || n > 600 {
			t.Errorf("%s owns %d of 2000 sessions", u, n)
		}
	}
	// Removing c moves only c's sessions; adding e moves only those e now wins (about 1/5).
	three := cands("http://a", "http://b", "http://d")
	five := cands("http://a", "http://b", "http://c", "http://d", "http://e")
	movedAdd := 0
	for key, was := range owner {
		now := three[p.Pick(Input{SessionKey: key}, three).Index].URL
		if was != "http://c" && now != was {
			t.Fatalf("%s moved from %s to %s though %s stayed", key, was, now, was)
		}
		if got := five[p.Pick(Input{SessionKey: key}, five).Index].URL; got != was {
			if got != "http://e" {
				t.Fatalf("%s moved from %s to %s on adding e", key, was, got)
			}
			movedAdd++
		}
	}
	if movedAdd < 300 || movedAdd > 500 {
		t.Errorf("adding a fifth backend moved %d of 2000 sessions, want about 400", movedAdd)
	}
	if d := p.Pick(Input{}, four); d.Reason != ReasonFallback {
		t.Fatalf("no key: reason %q", d.Reason)
	}
}

func TestBlockHashesChain(t *testing.T) {
	a := strings.Repeat("x", 64) + strings.Repeat("y", 64) + strings.Repeat("z", 64) + "tail"
	b := strings.Repeat("x", 64) + strings.Repeat("y", 64) + strings.Repeat("w", 64)
	c := strings.Repeat("y", 64) + strings.Repeat("y", 64)
	ha := BlockHashes(nil, a, 64, 100)
	hb := BlockHashes(nil, b, 64, 100)
	hc := BlockHashes(nil, c, 64, 100)
	if len(ha) != 3 || len(hb) != 3 {
		t.Fatalf("blocks %d %d, want 3 (partial tail not hashed)", len(ha), len(hb))
	}
	if ha[0] != hb[0] || ha[1] != hb[1] || ha[2] == hb[2] {
		t.Fatalf("shared prefix: %x vs %x", ha, hb)
	}
	if hc[1] == ha[1] { // same block text, different history: chained hashes differ
		t.Fatal("block hash does not depend on the blocks before it")
	}
	if n := len(BlockHashes(nil, a, 64, 2)); n != 2 {
		t.Fatalf("maxBlocks: %d", n)
	}
	if n := len(BlockHashes(nil, "short", 64, 10)); n != 0 {
		t.Fatalf("short prompt: %d blocks", n)
	}
}

func TestPrefixPolicy(t *testing.T) {
	sys := strings.Repeat("You are a helpful assistant. ", 20) // 580 bytes: 9 blocks
	p := NewPrefixPolicy(PrefixConfig{BlockSizeBytes: 64, LoadThreshold: 4})
	c := cands("a", "b", "c")
	first := p.Pick(Input{Prompt: sys + "question one"}, c)
	if first.Reason != ReasonLeastLoad || first.PrefixHit || !first.PrefixLookup {
		t.Fatalf("first: %+v", first)
	}
	// The same system prompt follows to the same backend, even when it is a little busier.
	c[first.Index].Inflight = 3
	second := p.Pick(Input{Prompt: sys + "question two, a different one"}, c)
	if second.Index != first.Index || second.Reason != ReasonPrefixHit || second.MatchedBlocks != 9 {
		t.Fatalf("second: %+v (first %d)", second, first.Index)
	}
	// Too busy: balance wins.
	c[first.Index].Inflight = 10
	third := p.Pick(Input{Prompt: sys + "q3"}, c)
	if third.Index == first.Index || third.Reason != ReasonPrefixOverload || third.PrefixHit {
		t.Fatalf("third: %+v", third)
	}
	// Now two backends hold the prefix; the less loaded of them wins.
	c[first.Index].Inflight = 2
	c[third.Index].Inflight = 1
	fourth := p.Pick(Input{Prompt: sys + "q4"}, c)
	if fourth.Index != third.Index || fourth.Reason != ReasonPrefixHit {
		t.Fatalf("fourth: %+v", fourth)
	}
	// A longer match beats a shorter one.
	long := sys + strings.Repeat("more shared context ", 10)
	c[first.Index].Inflight, c[third.Index].Inflight = 0, 0
	d := p.Pick(Input{Prompt: long + "x"}, c)
	e := p.Pick(Input{Prompt: long + "y"}, c)
	if e.Index != d.Index || e.MatchedBlocks <= 9 {
		t.Fatalf("longest match: %+v after %+v", e, d)
	}
	// Forget drops a backend's table.
	p.Forget(c[d.Index].URL)
	c[d.Index].Inflight = 1
	if f := p.Pick(Input{Prompt: long + "z"}, c); f.Index == d.Index {
		t.Fatalf("forgotten backend still matched: %+v", f)
	}
	// No prompt: least load, no lookup.
	if g := p.Pick(Input{}, c); g.PrefixLookup || g.Reason != ReasonLeastLoad {
		t.Fatalf("empty prompt: %+v", g)
	}
}

func TestBlockLRU(t *testing.T) {
	l := newBlockLRU(3)
	for _, k := range []uint64{1, 2, 3} {
		l.Touch(k)
	}
	l.Touch(1) // 2 is now the least recently used
	l.Touch(4)
	if l.Has(2) || !l.Has(1) || !l.Has(3) || !l.Has(4) || l.Len() != 3 {
		t.Fatalf("after eviction: has1=%v has2=%v has3=%v has4=%v len=%d", l.Has(1), l.Has(2), l.Has(3), l.Has(4), l.Len())
	}
	// Compare with a plain reference over a random sequence.
	ref := []uint64{} // most recent last
	l = newBlockLRU(8)
	x := uint64(1)
	for range 5000 {
		x = x*6364136223846793005 + 1442695040888963407
		k := (x >> 33) % 20
		l.Touch(k)
		for i, v := range ref {
			if v == k {
				ref = append(ref[:i], ref[i+1:]...)
				break
			}
		}
		ref = append(ref, k)
		if len(ref) > 8 {
			ref = ref[1:]
		}
		for _, v := range ref {
			if !l.Has(v) {
				t.Fatalf("lost %d", v)
			}
		}
		if l.Len() != len(ref) {
			t.Fatalf("len %d want %d", l.Len(), len(ref))
		}
	}
}
