// Test of the hidden states passed to a HiddenProposer: at greedy, each request's Hidden is
// the row that produced its last token (times the output matrix it gives logits whose argmax
// is that token), after plain decodes, verifications with accepted drafts and preemptions
// alike; a Proposer that does not ask gets none.
package engine

import (
	"testing"
)

// hiddenOracle is an oracleProposer that asks for hidden rows and checks them.
type hiddenOracle struct {
	*oracleProposer
	needs   bool
	out     []float32 // output matrix [Vocab, Dim]
	dim     int
	checked int
	missing int
	wrong   int
}

func (p *hiddenOracle) NeedsHidden() bool { return p.needs }

func (p *hiddenOracle) Propose(reqs []ProposeRequest) error {
	for _, r := range reqs {
		if r.Hidden == nil {
			p.missing++
			continue
		}
		if len(r.Hidden) != p.dim {
			p.wrong++
			continue
		}
		best, bestV := -1, float64(0)
		for v := range len(p.out) / p.dim {
			var s float64
			for i, x := range r.Hidden {
				s += float64(x) * float64(p.out[v*p.dim+i])
			}
			if best < 0 || s > bestV {
				best, bestV = v, s
			}
		}
		if best != r.Tokens[len(r.Tokens)-1] {
			p.wrong++
		}
		p.checked++
	}
	return p.oracleProposer.Propose(reqs)
}

func TestSpecHiddenRows(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	m := b.Model
	w := m.Weights["output.weight"]
	if w == nil {
		w = m.Weights["token_embd.weight"]
	}
	out, err := w.Float32()
	if err != nil {
		t.Fatal(err)
	}
	reqs := greedyRequests(16, m.Config.Vocab, 61)
	plain := newEngine(t, b, nil)
	want := runAll(t, plain, reqs)
	refs := references(t, plain, reqs)
	for _, needs := range []bool{true, false} {
		// Whether the KV pool runs short (preemptions) depends on how many sequences the
		// scheduler admits together, which depends on timing on a loaded host: up to three
		// runs, each checked in full, until one preempts.
		var p *hiddenOracle
		var e *Engine
		var st Stats
		for attempt := range 3 {
			p = &hiddenOracle{oracleProposer: newOracle(refs, 0.3, m.Config.Vocab), needs: needs, out: out, dim: m.Config.Dim}
			e = newEngine(t, b, func(o *Options) {
				specOpts(p, 3)(o)
				o.Scheduler.MaxModelLenTokens = 128
				o.KVCacheBytes = 10 * 16 * KVBytesPerToken(m.Config.Layers, m.Config.KVHeads, m.Config.HeadDim, 4)
			})
			got := runAll(t, e, reqs)
			compareResults(t, want, got)
			shutdownAndCheck(t, e)
			st = e.Stats()
			if st.Preemptions > 0 {
				break
			}
			t.Logf("attempt %d: no preemption", attempt)
		}
		t.Logf("needs %v: %d hidden rows checked, %d missing, %d wrong; %d preemptions, %d accepted", needs, p.checked, p.missing, p.wrong, st.Preemptions, st.Spec.AcceptedTokens)
		switch {
		case needs && (p.checked == 0 || p.missing != 0 || p.wrong != 0):
			t.Errorf("hidden rows: %d checked, %d missing, %d wrong", p.checked, p.missing, p.wrong)
		case !needs && p.checked != 0:
			t.Errorf("hidden rows given to a Proposer that did not ask: %d", p.checked)
		case st.Preemptions == 0 || st.Spec.AcceptedTokens == 0:
			t.Errorf("want preemptions and accepted drafts: %d, %d", st.Preemptions, st.Spec.AcceptedTokens)
		}
		if e.runner.b.KeepHidden != needs {
			t.Errorf("KeepHidden %v", e.runner.b.KeepHidden)
		}
	}
}
