// Tests of Run with real processes: the test binary re-executes itself as the ranks (and, for
// the parent-death test, as the launcher), each child playing one scenario chosen by
// LLMCLOUD_LAUNCH_TEST environment variable.
package launch

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const scenarioEnv = "LLMCLOUD_LAUNCH_TEST"

func TestMain(m *testing.M) {
	if sc := os.Getenv(scenarioEnv); sc != "" {
		os.Exit(child(sc))
	}
	os.Exit(m.Run())
}

// child plays a rank (or the launcher) of one scenario.
func child(sc string) int {
	rank, _ := strconv.Atoi(os.Getenv("RANK"))
	switch sc {
	case "env":
		fmt.Printf("out %s %s %s %s %s %s\n", os.Getenv("MASTER_ADDR"), os.Getenv("MASTER_PORT"),
			os.Getenv("WORLD_SIZE"), os.Getenv("RANK"), os.Getenv("LOCAL_RANK"), os.Getenv("LOCAL_WORLD_SIZE"))
		fmt.Fprintf(os.Stderr, "err from %d\npartial", rank)
		return 0
	case "fail": // rank 1 fails; the others notice a little later and exit 1 by themselves
		if rank == 1 {
			fmt.Fprintln(os.Stderr, "boom")
			return 3
		}
		time.Sleep(2 * time.Second) // long enough for rank 1 to start and fail first
		fmt.Fprintln(os.Stderr, "rank 1 died")
		return 1
	case "hang": // rank 1 fails; rank 0 starts a grandchild and never exits
		if rank == 1 {
			time.Sleep(200 * time.Millisecond)
			return 3
		}
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), scenarioEnv+"=sleep")
		if err := gc.Start(); err != nil {
			return 9
		}
		fmt.Printf("grandchild %d\n", gc.Process.Pid)
		select {}
	case "crash": // rank 0 reports an error at once; rank 1 is killed by a signal a moment later
		if rank == 0 {
			fmt.Fprintln(os.Stderr, "rank 1 died")
			return 1
		}
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "term": // save-and-exit on the forwarded signal
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
		fmt.Println("ready")
		s := <-ch
		fmt.Fprintf(os.Stderr, "got %v, saving\n", s)
		return 0
	case "stubborn": // ignores the signal
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		select {}
	case "launcher": // a launcher of sleeping ranks, to be SIGKILLed by the test
		return exitCode(Run(Options{Exe: os.Args[0], NProc: 2, Env: []string{scenarioEnv + "=sleep"},
			Stdout: os.Stdout, Stderr: os.Stderr, Grace: time.Second,
			OnStart: func(r, pid int) { fmt.Printf("pid %d\n", pid) }}))
	}
	return 99
}

func exitCode(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

func run(t *testing.T, sc string, n int, grace time.Duration, sigs <-chan os.Signal) (string, string, []int, error) {
	t.Helper()
	var out, errb strings.Builder
	var pids []int
	err := Run(Options{Exe: os.Args[0], NProc: n, Env: []string{scenarioEnv + "=" + sc},
		Stdout: &out, Stderr: &errb, Grace: grace, Signals: sigs,
		OnStart: func(r, pid int) { pids = append(pids, pid) }})
	return out.String(), errb.String(), pids, err
}

func TestEnvAndOutput(t *testing.T) {
	out, errs, pids, err := run(t, "env", 3, time.Second, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	if len(pids) != 3 {
		t.Fatalf("OnStart called %d times", len(pids))
	}
	f := strings.Fields(out)
	if len(f) != 7 || f[0] != "out" || f[1] != "127.0.0.1" || f[3] != "3" || f[4] != "0" || f[5] != "0" || f[6] != "3" {
		t.Fatalf("rank 0's stdout = %q", out)
	}
	if port, _ := strconv.Atoi(f[2]); port <= 0 {
		t.Fatalf("MASTER_PORT %q", f[2])
	}
	for r := 1; r < 3; r++ {
		want := fmt.Sprintf("[rank %d] out 127.0.0.1 %s 3 %d %d 3\n", r, f[2], r, r)
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
		for _, w := range []string{fmt.Sprintf("[rank %d] err from %d\n", r, r), fmt.Sprintf("[rank %d] partial\n", r)} {
			if !strings.Contains(errs, w) {
				t.Errorf("stderr lacks %q:\n%s", w, errs)
			}
		}
	}
	if !strings.Contains("\n"+errs, "\nerr from 0\n") || !strings.Contains("\n"+errs, "\npartial\n") {
		t.Errorf("rank 0's stderr not passed as it is:\n%s", errs)
	}
}

func TestFailureNamesTheRankAndOthersExitByThemselves(t *testing.T) {
	_, errs, _, err := run(t, "fail", 3, 20*time.Second, nil)
	var je *JobError
	if !errors.As(err, &je) {
		t.Fatalf("err = %v, want a *JobError\n%s", err, errs)
	}
	if je.First.Rank != 1 || je.First.LastLine != "boom" || !strings.Contains(je.First.Err.Error(), "exit status 3") {
		t.Fatalf("first failure %+v", je.First)
	}
	if !strings.Contains(err.Error(), "rank 1 failed (exit status 3): boom") {
		t.Errorf("message %q", err)
	}
	for _, r := range []int{0, 2} {
		x := je.Exits[r]
		if x.Killed || x.Err == nil || x.LastLine != "rank 1 died" || x.After <= 0 || x.After > 20*time.Second {
			t.Errorf("rank %d: %+v", r, x)
		}
	}
}

// A rank killed by a signal is named as the cause even when another rank's error is seen first.
func TestSignaledRankIsTheCause(t *testing.T) {
	_, errs, _, err := run(t, "crash", 2, 20*time.Second, nil)
	var je *JobError
	if !errors.As(err, &je) || je.First.Rank != 1 || !strings.Contains(err.Error(), "rank 1 failed (signal: killed)") {
		t.Fatalf("err = %v\n%s", err, errs)
	}
	if je.Exits[0].Err == nil || je.Exits[0].Killed {
		t.Errorf("rank 0: %+v", je.Exits[0])
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z" // a zombie has exited
}

func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return
		}
	}
	t.Errorf("%s (pid %d) still alive", what, pid)
}

func TestHungRankIsKilledWithItsGroup(t *testing.T) {
	start := time.Now()
	out, errs, _, err := run(t, "hang", 2, 500*time.Millisecond, nil)
	var je *JobError
	if !errors.As(err, &je) || je.First.Rank != 1 || !je.Exits[0].Killed || je.Exits[1].Killed {
		t.Fatalf("err = %v (%+v)\n%s", err, je, errs)
	}
	if !strings.Contains(err.Error(), "killed rank(s) 0") {
		t.Errorf("message %q", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
	var gc int
	if _, err := fmt.Sscanf(out, "grandchild %d", &gc); err != nil {
		t.Fatalf("rank 0's output %q: %v", out, err)
	}
	waitDead(t, gc, "rank 0's grandchild")
}

func TestSignalsAreForwarded(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	go func() { time.Sleep(time.Second); sigs <- syscall.SIGTERM }()
	_, errs, _, err := run(t, "term", 2, time.Second, sigs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	for _, w := range []string{"got terminated, saving", "[rank 1] got terminated, saving"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
}

func TestSecondSignalKills(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	go func() {
		time.Sleep(time.Second)
		sigs <- syscall.SIGTERM
		time.Sleep(300 * time.Millisecond)
		sigs <- syscall.SIGTERM
	}()
	_, errs, pids, err := run(t, "stubborn", 2, time.Minute, sigs)
	var je *JobError
	if !errors.As(err, &je) || !je.Exits[0].Killed || !je.Exits[1].Killed || je.Signal != syscall.SIGTERM ||
		!strings.HasPrefix(err.Error(), "stopped by terminated: ") {
		t.Fatalf("err = %v\n%s", err, errs)
	}
	for _, p := range pids {
		waitDead(t, p, "rank")
	}
}

// SIGKILL the launcher itself: the parent-death signal takes its ranks down.
func TestRanksDieWithTheLauncher(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), scenarioEnv+"=launcher")
	pr, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pr)
	var pids []int
	for len(pids) < 2 && sc.Scan() {
		var p int
		if _, err := fmt.Sscanf(sc.Text(), "pid %d", &p); err == nil {
			pids = append(pids, p)
		}
	}
	if len(pids) != 2 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("launcher printed pids %v", pids)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, p := range pids {
		waitDead(t, p, "rank of a killed launcher")
	}
}

func TestBadOptions(t *testing.T) {
	if err := Run(Options{Exe: os.Args[0], NProc: 0}); err == nil {
		t.Error("NProc 0 accepted")
	}
	err := Run(Options{Exe: "/nonexistent/llmcloud", NProc: 2, Stdout: os.Stdout, Stderr: os.Stderr})
	if err == nil || !strings.Contains(err.Error(), "starting rank 0") {
		t.Errorf("missing program: %v", err)
	}
}
