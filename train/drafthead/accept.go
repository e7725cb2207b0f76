// This file measures what the heads are for: greedy speculative decoding simulated on the
// target's own greedy continuations of validation prompts. From each verified position the
// proposer (spec.HeadProposer, given the target's real hidden row) drafts K tokens; the
// leading drafts equal to the target's next greedy tokens are accepted, plus the target's
// own token, and the walk moves on past them, as the engine's greedy verification does.
package drafthead

import (
	"fmt"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/spec"
	"github.com/llmcloud/llmcloud/train"
)

// Acceptance is a simulated greedy speculative decode's counts.
type Acceptance struct {
	K              int
	Verifications  int   // target forwards (each verifying K drafts)
	Tokens         int   // tokens produced by them (accepted drafts + one each)
	AcceptedPerPos []int // verifications whose draft at position i was accepted
	// DraftTime and DecodeTime are the mean wall times of one Propose call and one target
	// decode step (one token), measured on the way: the draft's cost in decode steps.
	DraftTime, DecodeTime time.Duration
}

func (a *Acceptance) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "greedy speculation, k=%d: %d verifications, %.3f tokens per target forward; acceptance by position:",
		a.K, a.Verifications, float64(a.Tokens)/float64(max(a.Verifications, 1)))
	for _, n := range a.AcceptedPerPos {
		fmt.Fprintf(&b, " %.1f%%", 100*float64(n)/float64(max(a.Verifications, 1)))
	}
	fmt.Fprintf(&b, "; a draft of %d takes %v, a target decode step %v (%.2f of one)",
		a.K, a.DraftTime.Round(time.Microsecond), a.DecodeTime.Round(time.Microsecond), float64(a.DraftTime)/float64(max(a.DecodeTime, 1)))
	return b.String() + "\n"
}

// MeasureAcceptance runs the target greedily for gen tokens after each prompt and walks the
// continuation as greedy speculative decoding with k drafts from p would.
func MeasureAcceptance(m *model.Model, p *spec.HeadProposer, k int, prompts [][]int, gen int) (*Acceptance, error) {
	a := &Acceptance{K: k, AcceptedPerPos: make([]int, k)}
	D := m.Config.Dim
	var decodes int
	var decodeTime, draftTime time.Duration
	for _, prompt := range prompts {
		c := m.NewCache(len(prompt) + gen)
		c.KeepHidden(true)
		toks := append([]int(nil), prompt...)
		var hidden []float32 // row g: the hidden state that produced generated token g
		logits, err := m.Forward(c, prompt, 0, false)
		for g := 0; g < gen && err == nil; g++ {
			hidden = append(hidden, c.Hidden()...)
			toks = append(toks, argmaxRow(logits))
			if g+1 < gen {
				t0 := time.Now()
				logits, err = m.Decode(c, toks[len(toks)-1])
				decodeTime += time.Since(t0)
				decodes++
			}
		}
		if err != nil {
			return nil, err
		}
		out := toks[len(prompt):]
		req := []engine.ProposeRequest{{K: k}}
		for pos := 0; pos+k < len(out); {
			req[0].Tokens, req[0].Hidden = toks[:len(prompt)+pos+1], hidden[pos*D:(pos+1)*D]
			t0 := time.Now()
			if err := p.Propose(req); err != nil {
				return nil, err
			}
			draftTime += time.Since(t0)
			acc := 0
			for i, d := range req[0].Draft {
				if d != out[pos+1+i] {
					break
				}
				a.AcceptedPerPos[i]++
				acc++
			}
			a.Verifications++
			a.Tokens += acc + 1
			pos += acc + 1
		}
	}
	a.DraftTime = draftTime / time.Duration(max(a.Verifications, 1))
	a.DecodeTime = decodeTime / time.Duration(max(decodes, 1))
	return a, nil
}

func argmaxRow(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// ValPrompts takes n prompts of length l from the start of the val split's windows of dir.
func ValPrompts(dir string, n, l int) ([][]int, error) {
	d, closeData, err := train.OpenData(dir, 1, l)
	if err != nil {
		return nil, err
	}
	defer closeData()
	if d.Val == nil {
		return nil, fmt.Errorf("drafthead: %s has no val split", dir)
	}
	x, y := make([]int32, l), make([]int32, l)
	var ps [][]int
	for range n {
		d.Val.Next(x, y)
		p := make([]int, l)
		for i, t := range x {
			p[i] = int(t)
		}
		ps = append(ps, p)
	}
	return ps, nil
}
