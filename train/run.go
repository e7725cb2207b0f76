// This file implements Run: the whole run around Trainer.Step — progress lines, the JSONL log,
// validation every EvalEvery steps, checkpoints every CkptEvery steps and at the end (also
// when the context is cancelled), the loss curve, and the exports asked for.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// RunOptions are the run's outputs.
type RunOptions struct {
	Progress io.Writer // progress lines (nil: none)
	Bar      bool      // draw a progress bar on Progress (for terminals)
	// PeakFLOPS is the machine's peak FLOP/s for MFU; 0 measures it with the run's thread
	// count before the first step.
	PeakFLOPS float64
	// OnStep, if set, is called after every step (before its validation and checkpoint).
	OnStep func(StepStats)
}

// Summary is the outcome of a run.
type Summary struct {
	Steps        int
	Tokens       int64
	TrainLoss    float32 // last step's loss
	ValLoss      float64 // last validation (0 without validation data)
	ValPPL       float64
	Elapsed      time.Duration // training compute time (all runs of a resumed run)
	TokensPerS   float64       // over this invocation's steps
	MFU          float64       // over this invocation's steps (the world's FLOPs over world·peak)
	HFU          float64       // hardware FLOPs utilisation (= MFU unless Recompute)
	PeakFLOPS    float64
	Checkpoint   string // directory of the final checkpoint ("" without --out)
	LossCurvePNG string
}

// Run trains until Cfg.Steps steps have been taken. Cancelling ctx stops after the current
// step, saves a checkpoint and returns ctx.Err().
func (t *Trainer) Run(ctx context.Context, o RunOptions) (*Summary, error) {
	c := &t.Cfg
	out := o.Progress
	if out == nil || !t.par.writes() {
		out = io.Discard // in a distributed run only rank 0 reports
	}
	peak := o.PeakFLOPS
	if peak == 0 && t.par.writes() { // only rank 0 reports; the others do not disturb it
		peak = MeasurePeakFLOPS(c.Threads)
	}
	world := t.par.grid.World()
	flopsPerToken, hwFLOPsPerToken := t.Net.FLOPsPerToken(c.Seq) // the whole model's count
	fmt.Fprintf(out, "model: %d parameters, %d layers, dim %d, %d heads (%d kv), ffn %d, vocab %d, ctx %d\n",
		t.Net.NumParams(), t.Model.Layers, t.Model.Dim, t.Model.Heads, t.Model.KVHeads, t.Model.FFN, t.Model.Vocab, t.Model.CtxLen)
	fmt.Fprintf(out, "batch %d x %d tokens x %d accum = %d tokens/step; %d steps; %.3g model FLOPs/token; peak %.1f GFLOP/s (%d threads)",
		c.Batch, c.Seq, c.GradAccum, c.TokensPerStep(), c.Steps, flopsPerToken, peak/1e9, c.Threads)
	if world > 1 {
		fmt.Fprintf(out, " per rank, x %d ranks", world)
	}
	fmt.Fprintln(out)

	if t.par.grid.World() > 1 {
		fmt.Fprintf(out, "grid %s (world %d)\n", t.par.grid, t.par.grid.World())
		fmt.Fprint(out, t.Memory())
	}
	if world > 1 { // every rank's own numbers (tensor and pipeline ranks hold different parts)
		m := t.Memory()
		fp, fg, fo := m.Formula()
		t.log.Info("memory per rank", "zero_stage", m.Stage, "psi", m.Psi,
			"params_bytes", m.ParamsBytes, "grads_bytes", m.GradsBytes, "optimizer_bytes", m.OptimBytes,
			"formula_params", fp, "formula_grads", fg, "formula_optimizer", fo)
	}

	var rl *runLog
	if c.Out != "" && t.par.writes() {
		var err error
		if rl, err = openRunLog(c.Out, t.step); err != nil {
			return nil, err
		}
		defer rl.Close()
	}
	sum := &Summary{PeakFLOPS: float64(world) * peak}
	// MFU counts the whole world's FLOPs (the global batch's tokens) against world·peak.
	pr := newProgress(out, o.Bar, t.step, c.Steps, flopsPerToken, hwFLOPsPerToken, float64(world)*peak, world > 1 || c.Recompute)
	var runTokens int64
	var runDur time.Duration
	evaluated := -1
	eval := func() error {
		loss, ppl, ok, err := t.Eval()
		if err != nil || !ok {
			return err
		}
		evaluated = t.step
		sum.ValLoss, sum.ValPPL = loss, ppl
		pr.linef("step %d | val loss %.4f | val ppl %.2f", t.step, loss, ppl)
		if rl != nil {
			if err := rl.add(Record{Step: t.step, ValLoss: &loss, ValPPL: ppl}); err != nil {
				return fmt.Errorf("train: log: %w", err)
			}
			if _, err := t.curve(rl); err != nil {
				return err
			}
		}
		return nil
	}
	var stopErr error
	bad, firstBad := 0, 0 // consecutive skipped steps and the first of them
	for t.step < c.Steps {
		if stop, err := t.stopAgreed(ctx); stop { // all ranks stop after the same step
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				return nil, err // the agreement itself failed: a rank died
			}
			stopErr = err
			break
		}
		s, err := t.Step()
		if err != nil {
			return nil, err
		}
		runTokens += c.TokensPerStep()
		runDur += s.Duration
		pr.step(s, c.TokensPerStep(), c.LogEvery)
		if o.OnStep != nil {
			o.OnStep(s)
		}
		if rl != nil {
			loss := float64(s.Loss)
			tps, mfu, hfu := pr.rates(c.TokensPerStep(), s.Duration)
			if err := rl.add(Record{Step: s.Step, Loss: &loss, LR: s.LR, GradNorm: s.GradNorm, AuxLoss: float64(s.AuxLoss), Tokens: s.Tokens,
				StepMs: float64(s.Duration.Microseconds()) / 1000, TokensPerS: tps, MFU: mfu, HFU: hfu,
				Skipped: s.Skipped, Spikes: t.spikeCount()}); err != nil {
				return nil, fmt.Errorf("train: log: %w", err)
			}
		}
		if s.Skipped == "" {
			bad = 0
		} else {
			if bad == 0 {
				firstBad = s.Step
			}
			bad++
			pr.linef("step %d skipped: %s (%d in a row)", s.Step, s.Skipped, bad)
			if bad >= c.maxBadSteps() {
				return t.stopBad(sum, firstBad, s)
			}
		}
		if c.EvalEvery > 0 && t.step%c.EvalEvery == 0 {
			if err := eval(); err != nil {
				return nil, err
			}
		}
		if c.CkptEvery > 0 && t.step%c.CkptEvery == 0 && t.step < c.Steps {
			if _, err := t.Save(); err != nil {
				return nil, err
			}
		}
	}
	pr.finish()
	if stopErr == nil && evaluated != t.step {
		if err := eval(); err != nil {
			return nil, err
		}
	}
	sum.Steps, sum.Tokens, sum.TrainLoss, sum.Elapsed = t.step, t.tokens, t.last, t.elapsed
	sum.TokensPerS, sum.MFU, sum.HFU = pr.rates(runTokens, runDur)
	if c.Out != "" {
		dir, err := t.Save()
		if err != nil {
			return nil, err
		}
		sum.Checkpoint = dir
		if sum.LossCurvePNG, err = t.curve(rl); err != nil {
			return nil, err
		}
	}
	if stopErr != nil {
		return sum, stopErr
	}
	if c.ExportGGUF != "" {
		if err := t.Export(c.ExportGGUF, GGUF, c.ExportType); err != nil {
			return nil, err
		}
	}
	if c.ExportHF != "" {
		if err := t.Export(c.ExportHF, HF, c.ExportType); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

// curve redraws loss.png from the log.
func (t *Trainer) curve(rl *runLog) (string, error) {
	if rl == nil || len(rl.records) == 0 {
		return "", nil
	}
	path := filepath.Join(t.Cfg.Out, "loss.png")
	title := fmt.Sprintf("llama %dx%d, %d params", t.Model.Layers, t.Model.Dim, t.Net.NumParams())
	if err := WriteLossCurve(path, title, rl.records); err != nil {
		return "", fmt.Errorf("train: loss curve: %w", err)
	}
	return path, nil
}
