// This file implements the progress display: an optional progress bar and, every LogEvery
// steps, one line with the step, loss, learning rate, gradient norm, tokens/s, MFU and ETA;
// validation results get a line of their own.
package train

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress prints to w. MFU is model FLOPs per second (FLOPsPerToken's model count times
// tokens/s) over peakFLOPS; HFU the same with the hardware count (recomputation included).
// In a distributed run tokens/s is the whole world's and peakFLOPS is world·(one rank's peak).
type progress struct {
	w             io.Writer
	bar           *progressbar.ProgressBar // nil: lines only
	total         int
	flopsPerToken float64
	hwFLOPsPerTok float64
	peakFLOPS     float64
	showHFU       bool // distributed runs print HFU beside MFU

	n      int           // steps in the current interval
	tokens int64         // tokens in the current interval
	dur    time.Duration // compute time of the current interval
}

func newProgress(w io.Writer, bar bool, start, total int, flopsPerToken, hwFLOPsPerToken, peakFLOPS float64, showHFU bool) *progress {
	p := &progress{w: w, total: total, flopsPerToken: flopsPerToken, hwFLOPsPerTok: hwFLOPsPerToken,
		peakFLOPS: peakFLOPS, showHFU: showHFU}
	if bar {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("train"), progressbar.OptionShowCount(),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
		p.bar.Set(start)
	}
	return p
}

// rates are the throughput of a span of steps.
func (p *progress) rates(tokens int64, dur time.Duration) (tokPerS, mfu, hfu float64) {
	if dur <= 0 {
		return 0, 0, 0
	}
	tokPerS = float64(tokens) / dur.Seconds()
	if p.peakFLOPS > 0 {
		mfu = tokPerS * p.flopsPerToken / p.peakFLOPS
		hfu = tokPerS * p.hwFLOPsPerTok / p.peakFLOPS
	}
	return tokPerS, mfu, hfu
}

// step records one step and prints a line when the interval is full or the run ends.
func (p *progress) step(s StepStats, tokensPerStep int64, every int) {
	p.n++
	p.tokens += tokensPerStep
	p.dur += s.Duration
	if p.bar != nil {
		p.bar.Set(s.Step)
	}
	if p.n < every && s.Step < p.total {
		return
	}
	tps, mfu, hfu := p.rates(p.tokens, p.dur)
	eta := time.Duration(float64(p.dur) / float64(p.n) * float64(p.total-s.Step))
	util := fmt.Sprintf("MFU %.1f%%", 100*mfu)
	if p.showHFU {
		util += fmt.Sprintf(" | HFU %.1f%%", 100*hfu)
	}
	aux := ""
	if s.AuxLoss != 0 {
		aux = fmt.Sprintf(" | aux %.4f", s.AuxLoss)
	}
	p.linef("step %*d/%d | loss %.4f%s | lr %.2e | norm %.3f | %s tok/s | %s | ETA %s",
		digits(p.total), s.Step, p.total, s.Loss, aux, s.LR, s.GradNorm, si(tps), util, eta.Round(time.Second))
	p.n, p.tokens, p.dur = 0, 0, 0
}

// linef prints a line above the bar.
func (p *progress) linef(format string, a ...any) {
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.w, format+"\n", a...)
	if p.bar != nil {
		p.bar.RenderBlank()
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

func digits(n int) int { return len(fmt.Sprint(n)) }

// si prints a rate with a k/M suffix.
func si(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}
