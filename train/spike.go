// This file implements loss-spike handling: the global gradient norm of every taken step is
// kept for the last SpikeWindow steps, and a step whose norm exceeds SpikeThreshold times
// their median (once spikeMinHistory of them are known) is skipped as a non-finite one is —
// no optimizer update, the step counts and its data is consumed — with a log line naming the
// step, its norm and the threshold, "skipped" in its log.jsonl record and the run's count of
// such steps in "spikes". The median ignores the skipped steps, so a spike does not raise the
// bar for the next one. The test hook InjectSpike multiplies one step's loss and gradient by
// spikeInjectScale, as a corrupted batch would.
package train

import (
	"fmt"
	"slices"
)

const (
	defaultSpikeWindow = 50
	spikeMinHistory    = 10   // taken steps before the test starts
	spikeInjectScale   = 1000 // InjectSpike's factor
)

// spikeGuard is the running record of recent gradient norms.
type spikeGuard struct {
	norms   []float64 // the last window taken steps' norms, oldest first
	window  int
	k       float64
	skipped int // steps skipped as spikes in this run
}

func newSpikeGuard(c *Config) *spikeGuard {
	if c.SpikeThreshold <= 0 {
		return nil
	}
	w := c.SpikeWindow
	if w == 0 {
		w = defaultSpikeWindow
	}
	return &spikeGuard{window: w, k: c.SpikeThreshold}
}

// median of the recorded norms.
func (g *spikeGuard) median() float64 {
	s := slices.Clone(g.norms)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// check says why a step of gradient norm norm is a spike ("" if it is not) and records the
// norm of a step that is taken.
func (g *spikeGuard) check(step int, norm float64) string {
	if g == nil {
		return ""
	}
	if len(g.norms) >= spikeMinHistory {
		if m := g.median(); norm > g.k*m {
			g.skipped++
			return fmt.Sprintf("spike: grad_norm %.4g > %g x median %.4g of the last %d steps", norm, g.k, m, len(g.norms))
		}
	}
	g.norms = append(g.norms, norm)
	if len(g.norms) > g.window {
		g.norms = g.norms[1:]
	}
	return ""
}

// spikeCount is the run's number of steps skipped as spikes (0 without the guard).
func (t *Trainer) spikeCount() int {
	if t.spike == nil {
		return 0
	}
	return t.spike.skipped
}

// injectSpike scales the step's gradient (and returns its loss scaled) when the test hook
// asks for it at the step being taken.
func (t *Trainer) injectSpike(loss float64) float64 {
	if t.Cfg.InjectSpike != t.step+1 {
		return loss
	}
	_, g := t.Net.Flat()
	for i := range g {
		g[i] *= spikeInjectScale
	}
	t.log.Warn("injected a loss spike", "step", t.step+1, "factor", spikeInjectScale)
	return loss * spikeInjectScale
}
