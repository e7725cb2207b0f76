// Tests of the library with real processes: every collective and algorithm on 2, 3 and 4 ranks
// over TCP and shared memory, a rank killed mid-collective, a rank that hangs.
package comm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCollectives(t *testing.T) {
	for _, tr := range []Transport{TCP, SHM} {
		for _, n := range []int{2, 3, 4} {
			t.Run(fmt.Sprintf("%s/%d", tr, n), func(t *testing.T) {
				t.Parallel()
				runOK(t, n, "collectives", "LLMCLOUD_CCL_TRANSPORT="+string(tr))
			})
		}
	}
}

func TestKilledRankIsNamed(t *testing.T) {
	for _, tr := range []Transport{TCP, SHM} {
		t.Run(string(tr), func(t *testing.T) {
			const n, victim = 4, 2
			const timeout = 60 * time.Second
			j := startJob(t, n, "kill", "LLMCLOUD_CCL_TRANSPORT="+string(tr), "LLMCLOUD_COMM_TEST_TIMEOUT="+timeout.String())
			// Wait until the loop runs, then kill a rank in the middle of the next allreduce.
			for line := range j.seen[0] {
				if line == "iter 2" {
					break
				}
			}
			if err := j.cmds[victim].Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			errs := j.wait(t, timeout)
			took := time.Since(killed)
			for r, err := range errs {
				if r == victim {
					continue
				}
				out := j.rankOutput(r)
				if err == nil || !strings.Contains(out, "ERROR:") || !strings.Contains(out, fmt.Sprintf("rank %d", victim)) {
					t.Errorf("rank %d: exit %v, output does not name rank %d:\n%s", r, err, victim, out)
				}
			}
			t.Logf("survivors exited %v after the kill; rank 0 said: %s", took, lastLine(j.rankOutput(0)))
		})
	}
}

func TestHangReportsEveryRank(t *testing.T) {
	j := startJob(t, 3, "hang", "LLMCLOUD_COMM_TEST_TIMEOUT=3s")
	errs := j.wait(t, 2*time.Minute)
	out := j.output()
	for _, r := range []int{0, 2} {
		if errs[r] == nil {
			t.Errorf("rank %d exited 0 although rank 1 hung", r)
		}
	}
	for _, want := range []string{"allreduce #4 (float32[1048576]", "rank 1 never arrived (last seen in broadcast #3, finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the output:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "rank 2 is in allreduce #4") && !strings.Contains(out, "rank 0 is in allreduce #4") {
		t.Errorf("the report does not place the waiting ranks in allreduce #4:\n%s", out)
	}
	t.Logf("rank 0 said: %s", lastLine(j.rankOutput(0)))
}

func TestNoShmFilesLeft(t *testing.T) {
	runOK(t, 2, "collectives", "LLMCLOUD_CCL_TRANSPORT=shm")
	left, _ := filepath.Glob("/dev/shm/llmcloud-ccl-*")
	for _, f := range left {
		if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) < time.Minute {
			t.Errorf("shared-memory file left behind: %s", f)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// A collective that fails in a sub-group marks the process failed, so closing the world group
// does not wait the goodbye timeout (10 s) for the rank that hung: rank 0 exits right after its
// error.
func TestCloseAfterSubGroupFailure(t *testing.T) {
	j := startJob(t, 3, "subhang", "LLMCLOUD_COMM_TEST_TIMEOUT=1s")
	var failed time.Time
	for line := range j.seen[0] {
		if strings.HasPrefix(line, "ERROR:") {
			failed = time.Now()
			break
		}
	}
	if failed.IsZero() {
		t.Fatalf("rank 0 did not fail:\n%s", j.output())
	}
	done := make(chan error, 1)
	go func() { done <- j.cmds[0].Wait() }()
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		t.Fatalf("rank 0 still running 8 s after its error (closing the world group waits for the hung rank):\n%s", j.output())
	}
	took := time.Since(failed)
	if out := j.rankOutput(0); !strings.Contains(out, "rank 1") {
		t.Errorf("rank 0's error does not name rank 1:\n%s", out)
	}
	if took > 3*time.Second {
		t.Errorf("rank 0 exited %v after its error; want well under the 10 s goodbye wait", took)
	}
	t.Logf("rank 0 exited %v after its error", took.Round(time.Millisecond))
}
