// This file implements the guard against non-finite steps: a step whose loss or global
// gradient norm is NaN or infinite is detected before the optimizer update, which it skips
// (the step still counts and its data is consumed), and Run stops after MaxBadSteps of them in
// a row. It also holds the test hook that injects a NaN loss at chosen steps
// (LLMCLOUD_TRAIN_INJECT_NAN="k" or "k-m", 1-based steps; for tests and the chaos suite only).
package train

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxBadSteps is the number of consecutive skipped steps that stop a run when
// Config.MaxBadSteps is 0.
const DefaultMaxBadSteps = 5

// injectNaNEnv names the test hook's environment variable.
const injectNaNEnv = "LLMCLOUD_TRAIN_INJECT_NAN"

// maxBadSteps is the effective limit of consecutive skipped steps.
func (c *Config) maxBadSteps() int {
	if c.MaxBadSteps > 0 {
		return c.MaxBadSteps
	}
	return DefaultMaxBadSteps
}

// nonFinite says which of loss and norm is not finite ("" if both are).
func nonFinite(loss, norm float64) string {
	var why []string
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		why = append(why, "loss "+fmtFloat(loss))
	}
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		why = append(why, "grad_norm "+fmtFloat(norm))
	}
	return strings.Join(why, ", ")
}

// fmtFloat writes x as strconv does: "NaN", "+Inf", "-Inf" or a number.
func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// skipStep counts a step whose update was skipped and describes it.
func (t *Trainer) skipStep(start time.Time, loss, lr, norm float64, why string) StepStats {
	t.step++
	t.tokens += t.Cfg.TokensPerStep()
	d := time.Since(start)
	t.elapsed += d
	t.log.Warn("step skipped", "step", t.step, "why", why)
	return StepStats{Step: t.step, Loss: float32(loss), LR: lr, GradNorm: norm, Tokens: t.tokens,
		Duration: d, Skipped: why}
}

// injected returns loss, or NaN when the test hook asks for it at the step being taken.
func (t *Trainer) injected(loss float64) float64 {
	if t.injectNaN != nil && t.injectNaN(t.step+1) {
		return math.NaN()
	}
	return loss
}

// nanHookFromEnv reads LLMCLOUD_TRAIN_INJECT_NAN ("k" or "k-m"); nil when unset.
func nanHookFromEnv() (func(int) bool, error) {
	v := os.Getenv(injectNaNEnv)
	if v == "" {
		return nil, nil
	}
	a, b, rng := strings.Cut(v, "-")
	lo, err := strconv.Atoi(a)
	hi := lo
	if err == nil && rng {
		hi, err = strconv.Atoi(b)
	}
	if err != nil || lo < 1 || hi < lo {
		return nil, fmt.Errorf("train: %s=%q: want a step k or a range k-m (1-based)", injectNaNEnv, v)
	}
	return func(step int) bool { return step >= lo && step <= hi }, nil
}

// stopBad ends a run after too many skipped steps in a row: it saves a checkpoint (its weights
// and optimizer state are those of the last good step, first-1, since skipped steps change
// neither) and returns an error naming the steps.
func (t *Trainer) stopBad(sum *Summary, first int, last StepStats) (*Summary, error) {
	sum.Steps, sum.Tokens, sum.TrainLoss, sum.Elapsed = t.step, t.tokens, t.last, t.elapsed
	where := "no checkpoint (no --out)"
	if t.Cfg.Out != "" {
		dir, err := t.Save()
		if err != nil {
			return nil, fmt.Errorf("train: %d non-finite steps in a row (%d-%d), and the checkpoint failed: %w",
				last.Step-first+1, first, last.Step, err)
		}
		sum.Checkpoint = dir
		where = "checkpoint " + dir + " holds the weights of step " + strconv.Itoa(first-1)
	}
	return sum, fmt.Errorf("train: stopped at step %d: %d skipped steps (non-finite or spikes) in a row since step %d (last: %s); %s",
		last.Step, last.Step-first+1, first, last.Skipped, where)
}
