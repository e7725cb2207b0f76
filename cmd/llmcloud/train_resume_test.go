package main

import (
	"strings"
	"testing"
)

func TestResumeStepsWarning(t *testing.T) {
	if w := resumeStepsWarning("run/step-100", 100, 101, true); w != "" {
		t.Errorf("steps past the checkpoint: %q", w)
	}
	w := resumeStepsWarning("run/step-100", 100, 50, true)
	for _, want := range []string{"--steps 50 is not above step 100 of checkpoint run/step-100", "N > 100", "--steps 150 for 50 more"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if w := resumeStepsWarning("c", 100, 100, false); !strings.Contains(w, "the run's steps (from its checkpoint or --config) 100") || strings.Contains(w, "\n") {
		t.Errorf("steps from the checkpoint: %q", w)
	}
}
