// Tests of distributed `llmcloud train` through real processes: the test binary plays the
// llmcloud binary (TestMain runs runMain when LLMCLOUD_TEST_AS_MAIN=1), is started as the
// launcher with --nproc, and starts its ranks as `llmcloud train` does. One rank is killed or
// stopped mid-run (faults), and a killed run is resumed under the same and other world sizes.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/train"
)

const asMainEnv = "LLMCLOUD_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// distData prepares a small data set through `tokenizer train` and `data prepare`.
func distData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var text strings.Builder
	words := strings.Fields("the ferry left the harbour at six and the gulls followed it out to the island while a boy in a red coat counted buoys")
	for i := range 600 {
		text.WriteString(words[(i*7)%len(words)] + " " + words[(i*3+1)%len(words)] + " ")
		if i%12 == 11 {
			text.WriteString(".\n")
		}
		if i%60 == 59 {
			text.WriteString("\n")
		}
	}
	txt := filepath.Join(dir, "text.txt")
	os.WriteFile(txt, []byte(text.String()), 0o644)
	tok := filepath.Join(dir, "tok")
	run(t, "tokenizer", "train", "--vocab-size", "300", "--input", txt, "-o", tok)
	data := filepath.Join(dir, "data")
	run(t, "data", "prepare", "--tokenizer", tok, "--input", txt, "-o", data)
	return data
}

// distArgs is a run small enough for the normal test run but with steps long enough (about
// 50 ms) for a test to act between two of them.
func distArgs(data, out string, extra ...string) []string {
	return append([]string{"train", "--data", data, "--out", out, "--dim", "128", "--layers", "2", "--heads", "4",
		"--batch", "8", "--seq", "64", "--steps", "20", "--lr", "0.003", "--warmup", "3", "--seed", "7",
		"--eval-every", "0", "--eval-batches", "1", "--log-every", "1", "--threads", "1"}, extra...)
}

// launched is a running `llmcloud train --nproc N`.
type launched struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder // stdout and stderr, merged by lines
	pids map[int]int     // rank -> pid
	seen chan string     // every line, for waiting on progress
	done chan struct{}   // closed when the process has exited (err set)
	err  error
}

var rankStarted = regexp.MustCompile(`msg="rank started".* rank=(\d+) pid=(\d+)`)

func startLaunch(t *testing.T, args ...string) *launched {
	t.Helper()
	l := &launched{cmd: exec.Command(os.Args[0], args...), pids: map[int]int{},
		seen: make(chan string, 4096), done: make(chan struct{})}
	l.cmd.Env = append(os.Environ(), asMainEnv+"=1")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	l.cmd.Stdout, l.cmd.Stderr = pw, pw
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			l.mu.Lock()
			l.out.WriteString(line + "\n")
			if m := rankStarted.FindStringSubmatch(line); m != nil {
				r, _ := strconv.Atoi(m[1])
				l.pids[r], _ = strconv.Atoi(m[2])
			}
			l.mu.Unlock()
			select {
			case l.seen <- line:
			default:
			}
		}
		pr.Close()
	})
	go func() {
		l.err = l.cmd.Wait()
		readers.Wait()
		close(l.done)
	}()
	t.Cleanup(func() {
		l.cmd.Process.Kill()
		<-l.done
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, pid := range l.pids { // ranks are killed with the launcher (parent-death signal)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return l
}

func (l *launched) output() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.String()
}

func (l *launched) pid(t *testing.T, rank int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pids[rank]
	if !ok {
		t.Fatalf("no pid of rank %d in the launcher's output", rank)
	}
	return p
}

// waitStep waits for rank 0's progress line of step n.
func (l *launched) waitStep(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	l.waitLine(t, regexp.MustCompile(fmt.Sprintf(`^step +%d/`, n)), limit)
}

// waitLine waits for a line matching re.
func (l *launched) waitLine(t *testing.T, re *regexp.Regexp, limit time.Duration) {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case line := <-l.seen:
			if re.MatchString(line) {
				return
			}
		case <-l.done:
			t.Fatalf("exited (%v) before a line matching %s:\n%s", l.err, re, l.output())
		case <-timer.C:
			t.Fatalf("no line matching %s within %v:\n%s", re, limit, l.output())
		}
	}
}

// wait waits for the launcher to exit and returns how long that took.
func (l *launched) wait(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-l.done:
	case <-time.After(limit):
		t.Fatalf("still running after %v:\n%s", limit, l.output())
	}
	return time.Since(start)
}

// stepLosses reads log.jsonl of a run: each training step's loss, failing on a step logged twice.
func stepLosses(t *testing.T, runDir string) map[int]float64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(runDir, "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	losses := map[int]float64{}
	last := 0
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r struct {
			Step int      `json:"step"`
			Loss *float64 `json:"loss"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log.jsonl: %v in %q", err, line)
		}
		if r.Loss == nil {
			continue
		}
		if _, dup := losses[r.Step]; dup || r.Step <= last {
			t.Fatalf("log.jsonl: step %d logged again or out of order (after %d):\n%s", r.Step, last, raw)
		}
		losses[r.Step], last = *r.Loss, r.Step
	}
	return losses
}

// Killing one rank mid-run: the others exit by themselves, naming it, well within --timeout,
// and the launcher exits non-zero naming the killed rank.
func TestTrainNprocRankKilled(t *testing.T) { killRankOne(t, 2) }

// killRankOne starts nproc ranks with the extra flags, SIGKILLs rank 1 after step 3, and
// checks that every other rank exits by itself naming rank 1 within --timeout (20 s).
func killRankOne(t *testing.T, nproc int, extra ...string) {
	data := distData(t)
	args := append([]string{"--nproc", strconv.Itoa(nproc), "--steps", "100000", "--timeout", "20"}, extra...)
	l := startLaunch(t, distArgs(data, filepath.Join(t.TempDir(), "run"), args...)...)
	l.waitStep(t, 3, time.Minute)
	killed := time.Now()
	syscall.Kill(l.pid(t, 1), syscall.SIGKILL)
	l.wait(t, time.Minute)
	took := time.Since(killed)
	out := l.output()
	if l.err == nil {
		t.Fatalf("the launcher exited 0 after a rank was killed:\n%s", out)
	}
	if !strings.Contains(out, "rank 1 failed (signal: killed)") {
		t.Errorf("the launcher does not name the killed rank:\n%s", out)
	}
	for r := 0; r < nproc; r++ {
		if r == 1 {
			continue
		}
		re := fmt.Sprintf(`(?m)^(\[rank %d\] )?llmcloud train: rank %d of %d: .*rank 1 (died|.*closed)`, r, r, nproc)
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("rank %d's error does not name rank 1:\n%s", r, out)
		}
	}
	if strings.Contains(out, "killed rank(s)") {
		t.Errorf("a rank had to be killed instead of exiting by itself:\n%s", out)
	}
	if took > 20*time.Second {
		t.Errorf("the job took %v to end after the kill, --timeout is 20s", took)
	}
	t.Logf("job ended %v after rank 1 was killed", took.Round(time.Millisecond))
}

// A rank that hangs (SIGSTOP): the other times out within --timeout naming it; the launcher
// kills the hung rank after the grace and exits non-zero.
func TestTrainNprocRankHangs(t *testing.T) {
	t.Parallel() // mostly waiting for the timeout and the grace
	data := distData(t)
	l := startLaunch(t, distArgs(data, filepath.Join(t.TempDir(), "run"), "--nproc", "2", "--steps", "100000", "--timeout", "1")...)
	l.waitStep(t, 3, time.Minute)
	stopped := time.Now()
	syscall.Kill(l.pid(t, 1), syscall.SIGSTOP)
	l.waitLine(t, regexp.MustCompile(`msg="rank failed" .*rank=0 `), time.Minute)
	rank0 := time.Since(stopped)
	l.wait(t, time.Minute)
	took := time.Since(stopped)
	out := l.output()
	if l.err == nil {
		t.Fatalf("the launcher exited 0 with a hung rank:\n%s", out)
	}
	for _, want := range []string{"rank 0 failed (exit status 1)", "timed out after 1s on rank 0: rank 1", "killed rank(s) 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Rank 0 waits --timeout in its collective, then up to 3 s for the stopped rank's status
	// (comm's report); the launcher then gives the stopped rank the grace before killing it.
	if rank0 > (1+3+5)*time.Second { // 5 s for the step in progress on a loaded host
		t.Errorf("rank 0 failed %v after rank 1 hung, want within --timeout + 3 s (+5 s)", rank0)
	}
	if took-rank0 > (1+launchGraceSeconds+2)*time.Second {
		t.Errorf("the launcher took %v after rank 0 failed to end the job", took-rank0)
	}
	t.Logf("rank 0 failed %v and the job ended %v after rank 1 was stopped", rank0.Round(time.Millisecond), took.Round(time.Millisecond))
}

// 20 steps straight on 2 ranks, and 2 ranks killed after the checkpoint at step 10 then resumed
// from it: the same losses bit for bit, each step logged once. Resuming that checkpoint as dp1,
// dp4, tp2, pp2 and dp2 with ZeRO-3 gives the same losses within 1e-5.
func TestTrainNprocResume(t *testing.T) {
	t.Parallel()
	data := distData(t)
	tmp := t.TempDir()
	straight := filepath.Join(tmp, "straight")
	l := startLaunch(t, distArgs(data, straight, "--nproc", "2", "--ckpt-every", "10")...)
	l.wait(t, 2*time.Minute)
	if l.err != nil {
		t.Fatalf("straight run: %v\n%s", l.err, l.output())
	}
	want := stepLosses(t, straight)
	if len(want) != 20 || !(want[20] < want[1]) {
		t.Fatalf("straight run: losses %v (the loss must fall for the comparison to mean much)", want)
	}

	killed := filepath.Join(tmp, "killed")
	l = startLaunch(t, distArgs(data, killed, "--nproc", "2", "--ckpt-every", "10")...)
	l.waitStep(t, 11, time.Minute)
	syscall.Kill(l.pid(t, 1), syscall.SIGKILL)
	l.wait(t, time.Minute)
	if l.err == nil {
		t.Fatalf("the killed run finished anyway (steps too fast to interrupt?):\n%s", l.output())
	}
	ckpt10 := filepath.Join(killed, "ckpt", "step-00000010")
	l = startLaunch(t, "train", "--resume", "latest", "--out", killed, "--nproc", "2", "--threads", "1")
	l.wait(t, 2*time.Minute)
	if l.err != nil {
		t.Fatalf("resumed run: %v\n%s", l.err, l.output())
	}
	if !strings.Contains(l.output(), "resumed from "+ckpt10+" at step 10") {
		t.Errorf("did not resume from step 10:\n%s", l.output())
	}
	got := stepLosses(t, killed)
	for s := 1; s <= 20; s++ {
		if math.Float64bits(got[s]) != math.Float64bits(want[s]) {
			t.Errorf("step %d: loss %v killed+resumed, %v straight", s, got[s], want[s])
		}
	}
	if len(got) != 20 {
		t.Errorf("log has %d steps, want 20", len(got))
	}

	// SIGTERM to the launcher: forwarded, the ranks agree on a step, rank 0 saves it; resuming
	// from it gives the straight run's losses bit for bit.
	termed := filepath.Join(tmp, "termed")
	l = startLaunch(t, distArgs(data, termed, "--nproc", "2")...)
	l.waitStep(t, 11, time.Minute)
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait(t, time.Minute)
	stops := map[string]string{} // rank -> step it stopped after
	for _, m := range regexp.MustCompile(`rank (\d) of 2: interrupted after step (\d+)`).FindAllStringSubmatch(l.output(), -1) {
		if prev, ok := stops[m[1]]; ok && prev != m[2] {
			t.Fatalf("rank %s reported stops after steps %s and %s", m[1], prev, m[2])
		}
		stops[m[1]] = m[2]
	}
	if l.err == nil || len(stops) != 2 || stops["0"] != stops["1"] || !strings.Contains(l.output(), "stopped by terminated") {
		t.Fatalf("SIGTERM: exit %v, stops %v, want both ranks after the same step:\n%s", l.err, stops, l.output())
	}
	stepStop, _ := strconv.Atoi(stops["0"])
	if st, err := train.ReadState(filepath.Join(termed, "ckpt", fmt.Sprintf("step-%08d", stepStop))); err != nil || st.Step != stepStop {
		t.Fatalf("no checkpoint of step %d after SIGTERM: %v", stepStop, err)
	}
	l = startLaunch(t, "train", "--resume", "latest", "--out", termed, "--nproc", "2", "--threads", "1")
	l.wait(t, 2*time.Minute)
	if l.err != nil {
		t.Fatalf("resumed after SIGTERM: %v\n%s", l.err, l.output())
	}
	got = stepLosses(t, termed)
	for s := 1; s <= 20; s++ {
		if math.Float64bits(got[s]) != math.Float64bits(want[s]) {
			t.Errorf("step %d: loss %v stopped at %d and resumed, %v straight", s, got[s], stepStop, want[s])
		}
	}
	t.Logf("SIGTERM stopped both ranks after step %d; resumed to 20 bit for bit", stepStop)

	// The step-10 checkpoint of the dp2 run, resumed on other grids.
	for _, g := range []struct {
		name string
		args []string
	}{
		{"dp1", []string{"--nproc", "1"}},
		{"dp4", []string{"--nproc", "4"}},
		{"tp2", []string{"--nproc", "2", "--tp", "2"}},
		{"pp2", []string{"--nproc", "2", "--pp", "2"}},
		{"zero3", []string{"--nproc", "2", "--zero-stage", "3"}},
	} {
		out := filepath.Join(tmp, g.name)
		l = startLaunch(t, append([]string{"train", "--resume", ckpt10, "--out", out, "--threads", "1"}, g.args...)...)
		l.wait(t, 2*time.Minute)
		if l.err != nil {
			t.Fatalf("resumed as %s: %v\n%s", g.name, l.err, l.output())
		}
		got := stepLosses(t, out)
		worst := 0.0
		for s := 11; s <= 20; s++ {
			g2, ok := got[s]
			rel := math.Abs(g2-want[s]) / math.Abs(want[s])
			if !ok || !(rel < 1e-5) {
				t.Errorf("%s, step %d: loss %v, straight %v", g.name, s, g2, want[s])
			}
			worst = max(worst, rel)
		}
		if len(got) != 10 {
			t.Errorf("%s: log has %d steps, want 11..20", g.name, len(got))
		}
		t.Logf("resumed as %s: largest relative loss difference %.2e over steps 11-20", g.name, worst)
	}
}
