// This file drives one Grammar from many goroutines at once (run it with -race): every
// Matcher must see the same masks as a Matcher run alone.

package grammar

import (
	"slices"
	"sync"
	"testing"
)

func TestConcurrentMatchers(t *testing.T) {
	v := smallVocab()
	ir := ruleIR(map[string]*Expr{
		"root": Seq(Lit("a"), Star(Alt(Re(`[bc]+`), Lit("é"), Ref("root"))), Re(`b?`)),
	})
	docs := []string{"abcé", "aabbé", "abaé", "acccccbé", "ab"}
	// masks from a Grammar used alone
	want := map[string][][]uint64{}
	alone := mustCompile(t, ir)
	for _, d := range docs {
		m := alone.NewMatcher(v)
		for i := range len(d) + 1 {
			mask := make([]uint64, v.MaskWords())
			m.FillMask(mask)
			want[d] = append(want[d], mask)
			if i < len(d) {
				if err := m.AcceptBytes([]byte{d[i]}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	g := mustCompile(t, ir)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := range 20 {
				d := docs[(w+rep)%len(docs)]
				m := g.NewMatcher(v)
				mask := make([]uint64, v.MaskWords())
				for i := range len(d) + 1 {
					m.FillMask(mask)
					if !slices.Equal(mask, want[d][i]) {
						errs <- d
						return
					}
					if i < len(d) && m.AcceptBytes([]byte{d[i]}) != nil {
						errs <- d
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for d := range errs {
		t.Errorf("%q: masks differ from a Matcher run alone", d)
	}
}
