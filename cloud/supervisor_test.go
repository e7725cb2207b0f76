package cloud

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
)

// The test binary doubles as a replica: with LLMCLOUD_CLOUD_CHILD set it runs childMain, a
// small real HTTP server on the --host and --port the supervisor gives it. (The real
// `llmcloud serve` is supervised in cmd/llmcloud's tests; here the supervisor's process
// handling is under test, with real processes, signals and sockets.)
func TestMain(m *testing.M) {
	if os.Getenv("LLMCLOUD_CLOUD_CHILD") != "" {
		childMain()
		return
	}
	if os.Getenv("LLMCLOUD_CLOUD_SUPERVISOR") != "" {
		supervisorMain()
		return
	}
	os.Exit(m.Run())
}

// supervisorMain runs a supervisor of two child replicas, prints their pids once ready and
// waits to be killed.
func supervisorMain() {
	s, err := New(Options{Argv: []string{os.Args[0]}, Env: append(os.Environ(), "LLMCLOUD_CLOUD_SUPERVISOR=", "LLMCLOUD_CLOUD_CHILD=1"),
		Replicas: 2, PollInterval: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	s.Start()
	if err := s.WaitReady(context.Background(), 2); err != nil {
		panic(err)
	}
	for _, r := range s.Status() {
		fmt.Println("pid", r.PID)
	}
	select {}
}

// childMain: /health is 503 for $CHILD_DELAY_MS then 200; SIGTERM makes /health 503, keeps
// serving for $CHILD_DRAIN_MS, then exits 0. $CHILD_FAIL=1 exits 3 at once.
func childMain() {
	fs := flag.NewFlagSet("child", flag.ExitOnError)
	host := fs.String("host", "", "")
	port := fs.String("port", "", "")
	fs.Parse(os.Args[1:])
	if os.Getenv("CHILD_FAIL") == "1" {
		fmt.Fprintln(os.Stderr, "failing on purpose")
		os.Exit(3)
	}
	ms := func(k string) time.Duration {
		var v int
		fmt.Sscan(os.Getenv(k), &v)
		return time.Duration(v) * time.Millisecond
	}
	start := time.Now()
	var mu sync.Mutex
	draining := false
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\npartial line without newline", ln.Addr())
	http.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if draining || time.Since(start) < ms("CHILD_DELAY_MS") {
			w.WriteHeader(503)
			return
		}
		fmt.Fprintln(w, os.Getpid())
	})
	go http.Serve(ln, nil)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	fmt.Fprintln(os.Stderr, "got SIGTERM")
	mu.Lock()
	draining = true
	mu.Unlock()
	time.Sleep(ms("CHILD_DRAIN_MS"))
	os.Exit(0)
}

// changes records OnChange calls with their times.
type changes struct {
	mu   sync.Mutex
	sets [][]string
	at   []time.Time
	// alive, at each call, of every URL that left the set: was its process still running?
	leftAlive []bool
	pids      func() map[string]int
}

func (c *changes) on(urls []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.sets); n > 0 && c.pids != nil {
		pids := c.pids()
		for _, u := range c.sets[n-1] {
			if !slices.Contains(urls, u) {
				if pid, ok := pids[u]; ok {
					c.leftAlive = append(c.leftAlive, syscall.Kill(pid, 0) == nil)
				}
			}
		}
	}
	c.sets = append(c.sets, slices.Clone(urls))
	c.at = append(c.at, time.Now())
}

func (c *changes) last() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sets) == 0 {
		return nil
	}
	return c.sets[len(c.sets)-1]
}

func newTestSupervisor(t *testing.T, n int, env ...string) (*Supervisor, *changes, *proc.Buffer) {
	t.Helper()
	out := &proc.Buffer{}
	ch := &changes{}
	s, err := New(Options{Argv: []string{os.Args[0]}, Env: append(os.Environ(), append([]string{"LLMCLOUD_CLOUD_CHILD=1"}, env...)...),
		Replicas: n, Output: out, OnChange: ch.on, BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, StopTimeout: 5 * time.Second, StartTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ch.pids = func() map[string]int {
		m := map[string]int{}
		for _, st := range s.Status() {
			m[st.URL] = st.PID
		}
		return m
	}
	t.Cleanup(s.Stop)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s, ch, out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie, dead but not yet reaped, does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || !strings.Contains(string(stat), ") Z ")
}

// Start, SIGKILL one replica (it leaves the ready set at once and comes back on a new process),
// then Stop: every process is gone and the children's output was kept with a prefix.
func TestSupervisorRestartsCrashed(t *testing.T) {
	s, ch, out := newTestSupervisor(t, 2, "CHILD_DELAY_MS=100")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.WaitReady(ctx, 2); err != nil {
		t.Fatal(err)
	}
	st := s.Status()
	if len(st) != 2 || st[0].PID == st[1].PID || st[0].URL == st[1].URL {
		t.Fatalf("status %+v", st)
	}
	for _, r := range st {
		resp, err := http.Get(r.URL + "/health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s not healthy: %v", r.URL, err)
		}
		resp.Body.Close()
	}
	if got := ch.last(); !slices.Equal(got, []string{st[0].URL, st[1].URL}) {
		t.Fatalf("ready set %v", got)
	}
	victim := st[0]
	killed := time.Now()
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the dead replica to leave the ready set", func() bool { return !slices.Contains(ch.last(), victim.URL) })
	if gone := time.Since(killed); gone > 2*time.Second {
		t.Errorf("dead replica left the set after %s", gone)
	}
	waitFor(t, "the replica to come back", func() bool { return len(ch.last()) == 2 })
	now := s.Status()
	if now[0].Name != victim.Name || now[0].PID == victim.PID || now[0].Restarts != 1 || !strings.Contains(now[0].LastExit, "killed") {
		t.Fatalf("after restart: %+v (before %+v)", now[0], victim)
	}
	s.Stop()
	for _, r := range now {
		if alive(r.PID) {
			t.Errorf("pid %d alive after Stop", r.PID)
		}
	}
	if got := ch.last(); len(got) != 0 {
		t.Errorf("ready set after Stop: %v", got)
	}
	logs := out.String()
	for _, want := range []string{"[r1] listening on", "[r2] listening on", "[r1] partial line without newline\n", "[r2] got SIGTERM"} {
		if !strings.Contains(logs, want) {
			t.Errorf("output lacks %q:\n%s", want, logs)
		}
	}
	if err := s.Scale(context.Background(), 3); err == nil {
		t.Error("Scale after Stop succeeded")
	}
}

// Scale up and down: removed replicas leave the ready set while their process still runs
// (drain order), then exit; the not-ready and newest go first.
func TestSupervisorScale(t *testing.T) {
	s, ch, _ := newTestSupervisor(t, 1, "CHILD_DRAIN_MS=300")
	ctx := context.Background()
	if err := s.Scale(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Replicas(ctx); n != 3 {
		t.Fatalf("replicas %d", n)
	}
	if err := s.WaitReady(ctx, 3); err != nil {
		t.Fatal(err)
	}
	before := s.Status()
	if err := s.Scale(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Replicas(ctx); n != 1 {
		t.Fatalf("replicas right after scaling down %d", n)
	}
	waitFor(t, "two replicas to stop", func() bool { return len(s.Status()) == 1 })
	if got := ch.last(); !slices.Equal(got, []string{before[0].URL}) {
		t.Fatalf("ready set %v, want the oldest %s", got, before[0].URL)
	}
	for _, r := range before[1:] {
		if alive(r.PID) {
			t.Errorf("removed replica %s (pid %d) still running", r.Name, r.PID)
		}
	}
	ch.mu.Lock()
	left := slices.Clone(ch.leftAlive)
	ch.mu.Unlock()
	if len(left) != 2 || slices.Contains(left, false) {
		t.Errorf("removed replicas should leave the set before their process stops: %v", left)
	}
	if err := s.Scale(ctx, -1); err == nil {
		t.Error("negative scale accepted")
	}
}

// A replica that cannot start is retried with backoff and counted; it never joins the set, and
// Stop still returns. A binary that does not exist is the same, not a panic.
func TestSupervisorFailingStarts(t *testing.T) {
	s, ch, out := newTestSupervisor(t, 1, "CHILD_FAIL=1")
	waitFor(t, "three restarts", func() bool {
		st := s.Status()
		return len(st) == 1 && st[0].Restarts >= 3
	})
	if st := s.Status()[0]; !strings.Contains(st.LastExit, "exit status 3 (last stderr line: failing on purpose)") || st.EverReady {
		t.Errorf("last exit %q", st.LastExit)
	}
	if len(ch.last()) != 0 {
		t.Errorf("a failing replica joined the set: %v", ch.last())
	}
	if !strings.Contains(out.String(), "[r1] failing on purpose") {
		t.Errorf("output: %s", out.String())
	}
	s.Stop()

	bad, err := New(Options{Argv: []string{"/nonexistent/llmcloud", "serve"}, Replicas: 1, BackoffMin: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	bad.Start()
	waitFor(t, "failed starts", func() bool {
		st := bad.Status()
		return len(st) == 1 && st[0].Restarts >= 2 && strings.Contains(st[0].LastExit, "no such file")
	})
	bad.Stop()
	if len(bad.Status()) != 0 {
		t.Errorf("status after Stop: %+v", bad.Status())
	}
	if _, err := New(Options{}); err == nil {
		t.Error("empty Argv accepted")
	}
}

// A replica that never becomes healthy is killed after StartTimeout and started again.
func TestSupervisorStartTimeout(t *testing.T) {
	out := &proc.Buffer{}
	s, err := New(Options{Argv: []string{os.Args[0]}, Env: append(os.Environ(), "LLMCLOUD_CLOUD_CHILD=1", "CHILD_DELAY_MS=100000"),
		Replicas: 1, Output: out, StartTimeout: 300 * time.Millisecond, BackoffMin: 10 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	s.Start()
	var first int
	waitFor(t, "a first pid", func() bool { first = s.Status()[0].PID; return first != 0 })
	waitFor(t, "a restart after the start timeout", func() bool { st := s.Status()[0]; return st.Restarts >= 1 && st.PID != first })
	waitFor(t, "the timed-out process to be gone", func() bool { return !alive(first) })
	if st := s.Status()[0]; st.State == Ready {
		t.Errorf("never-healthy replica is ready: %+v", st)
	}
}

// A supervisor that is SIGKILLed (no chance to drain) takes its replicas with it: they get the
// parent-death signal.
func TestNoOrphansWhenSupervisorKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LLMCLOUD_CLOUD_SUPERVISOR=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	sc := bufio.NewScanner(out)
	for len(pids) < 2 && sc.Scan() {
		var pid int
		if _, err := fmt.Sscanf(sc.Text(), "pid %d", &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 2 {
		t.Fatalf("supervisor reported pids %v", pids)
	}
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("replica %d not running", p)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, "the replicas to die with their supervisor", func() bool { return !alive(pids[0]) && !alive(pids[1]) })
}
