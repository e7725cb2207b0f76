// The warning of a resumed run that has nothing to do: --steps is the run's total, so a value
// at or below the checkpoint's step trains no step.

package main

import (
	"fmt"
	"io"
	"os"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/train"
)

// warnResumeSteps prints resumeStepsWarning for the checkpoint ckDir ("" when not resuming),
// from one process of a run only (the launcher, or rank 0 under another launcher).
func warnResumeSteps(ckDir string, steps int, stepsGiven bool, stderr io.Writer) {
	if ckDir == "" || (comm.HasEnv() && (os.Getenv("LOCAL_WORLD_SIZE") != "" || os.Getenv("RANK") != "0")) {
		return
	}
	st, err := train.ReadState(ckDir)
	if err != nil {
		return // the run itself reports it
	}
	if w := resumeStepsWarning(ckDir, st.Step, steps, stepsGiven); w != "" {
		fmt.Fprintln(stderr, w)
	}
}

// resumeStepsWarning is the one-line warning for resuming checkpoint dir, taken at step ckStep,
// into a run of steps steps ("" when steps goes past ckStep). stepsGiven: --steps was on the
// command line (else the value is the config file's or the checkpoint's own).
func resumeStepsWarning(dir string, ckStep, steps int, stepsGiven bool) string {
	if steps > ckStep {
		return ""
	}
	src := "--steps"
	if !stepsGiven {
		src = "the run's steps (from its checkpoint or --config)"
	}
	return fmt.Sprintf("warning: %s %d is not above step %d of checkpoint %s: steps count the whole run, so nothing will be trained; pass --steps N with N > %d (e.g. --steps %d for %d more)",
		src, steps, ckStep, dir, ckStep, ckStep+max(steps, 1), max(steps, 1))
}
