// This file checks masks: on a small vocabulary, bit i of FillMask is set exactly when
// AcceptBytes(token i) succeeds, in many reachable states of hand-written and random grammars;
// EOS exactly when CanEnd; empty tokens never. Also FillMask does not allocate once warm.

package grammar

import (
	"math/rand/v2"
	"testing"
)

// smallVocab: every string over a, b, c up to 3 bytes, some UTF-8 pieces, an empty token and
// an EOS token (last).
func smallVocab() *Vocab {
	var toks [][]byte
	for _, s := range allStrings([]string{"a", "b", "c"}, 3)[1:] {
		toks = append(toks, []byte(s))
	}
	for _, s := range []string{"é", "\xc3", "\xa9", "aé", "é\xc3", "", "x", "ab\xc3", "A"} {
		toks = append(toks, []byte(s))
	}
	toks = append(toks, []byte("</s>"))
	return NewVocab(toks, []int{len(toks) - 1})
}

// checkMask compares m's mask with AcceptBytes of every token.
func checkMask(t *testing.T, m *Matcher, v *Vocab, where string) {
	t.Helper()
	mask := make([]uint64, v.MaskWords())
	for i := range mask {
		mask[i] = ^uint64(0) // FillMask must clear
	}
	m.FillMask(mask)
	eos := v.eos[0]
	for i, tok := range v.tokens {
		got := mask[i/64]>>(i%64)&1 != 0
		var want bool
		switch {
		case i == eos:
			want = m.CanEnd()
		case len(tok) == 0:
			want = false
		default:
			want = m.AcceptBytes(tok) == nil
			if want {
				m.Rollback(1)
			}
		}
		if got != want {
			t.Fatalf("%s: token %d %q: mask %v, AcceptBytes %v", where, i, tok, got, want)
		}
	}
}

func TestMaskSmallVocab(t *testing.T) {
	v := smallVocab()
	r := rand.New(rand.NewPCG(5, 6))
	irs := []*IR{}
	for _, ir := range handIRs {
		irs = append(irs, ir)
	}
	for len(irs) < 120 {
		irs = append(irs, randIR(r))
	}
	checked, accepted := 0, 0
	for _, ir := range irs {
		g, err := Compile(ir, Limits{})
		if err != nil {
			continue
		}
		// follow random allowed tokens, checking the mask at each step
		for walk := 0; walk < 4; walk++ {
			m := g.NewMatcher(v)
			mask := make([]uint64, v.MaskWords())
			for step := 0; step < 6; step++ {
				checkMask(t, m, v, ir.String())
				m.FillMask(mask)
				var allowed []int
				for i := range v.Size() {
					if mask[i/64]>>(i%64)&1 != 0 && i != v.eos[0] {
						allowed = append(allowed, i)
					}
				}
				if len(allowed) == 0 {
					break
				}
				checked++
				accepted += len(allowed)
				if err := m.Accept(allowed[r.IntN(len(allowed))]); err != nil {
					t.Fatalf("allowed token refused: %v", err)
				}
			}
		}
	}
	if checked < 500 || accepted < 5000 {
		t.Errorf("only %d masks with %d allowed tokens checked", checked, accepted)
	}
	t.Logf("%d masks, %d allowed tokens", checked, accepted)
}

func TestFillMaskAllocs(t *testing.T) {
	v := smallVocab()
	g := mustCompile(t, handIRs["ambiguous"])
	m := g.NewMatcher(v)
	if err := m.AcceptBytes([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, v.MaskWords())
	m.FillMask(mask)
	if n := testing.AllocsPerRun(100, func() { m.FillMask(mask) }); n != 0 {
		t.Errorf("FillMask allocates %v times per call once warm", n)
	}
}
