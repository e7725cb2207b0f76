// Faults in a pipeline-parallel run through the real CLI: killing the middle stage of a
// three-stage pipeline makes both neighbours exit by themselves, naming it, within --timeout.
package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTrainNprocPipelineStageKilled(t *testing.T) {
	data := distData(t)
	l := startLaunch(t, distArgs(data, filepath.Join(t.TempDir(), "run"), "--nproc", "3", "--pp", "3",
		"--layers", "3", "--micro-batches", "4", "--steps", "100000", "--timeout", "20")...)
	l.waitStep(t, 3, time.Minute)
	killed := time.Now()
	syscall.Kill(l.pid(t, 1), syscall.SIGKILL)
	l.wait(t, time.Minute)
	took := time.Since(killed)
	out := l.output()
	if l.err == nil {
		t.Fatalf("the launcher exited 0 after a stage was killed:\n%s", out)
	}
	if !strings.Contains(out, "rank 1 failed (signal: killed)") {
		t.Errorf("the launcher does not name the killed rank:\n%s", out)
	}
	for _, r := range []string{"0", "2"} {
		if !regexp.MustCompile(`(?m)^(\[rank ` + r + `\] )?llmcloud train: rank ` + r + ` of 3: .*rank 1 (died|.*closed)`).MatchString(out) {
			t.Errorf("rank %s's error does not name rank 1:\n%s", r, out)
		}
	}
	if strings.Contains(out, "killed rank(s)") {
		t.Errorf("a stage had to be killed instead of exiting by itself:\n%s", out)
	}
	if took > 20*time.Second {
		t.Errorf("the job took %v to end after the kill, --timeout is 20s", took)
	}
	t.Logf("job ended %v after stage 1 was killed", took.Round(time.Millisecond))
}
