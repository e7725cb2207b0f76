// The chaos suite's shared parts: the -chaos switch, the binary built once in TestMain, and
// proc, one llmcloud process with its logs, its listening address and a crash check.
package chaos

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

var (
	chaosFlag = flag.Bool("chaos", false, "run the chaos suite (or LLMCLOUD_CHAOS=1)")
	bin       string // the llmcloud binary built by TestMain, or $LLMCLOUD_CHAOS_BIN
	nofile    uint64 // RLIMIT_NOFILE of this process after TestMain raised it
)

func enabled() bool { return *chaosFlag || os.Getenv("LLMCLOUD_CHAOS") == "1" }

func TestMain(m *testing.M) {
	flag.Parse()
	if !enabled() {
		os.Exit(m.Run()) // every test skips
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		nofile = lim.Cur
	}
	dir, err := os.MkdirTemp("", "llmcloud-chaos")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if bin = os.Getenv("LLMCLOUD_CHAOS_BIN"); bin != "" { // a binary built elsewhere
		fmt.Printf("chaos: testing %s; open-file limit %d\n", bin, nofile)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	bin = filepath.Join(dir, "llmcloud")
	start := time.Now()
	build := exec.Command("go", "build", "-o", bin, "./cmd/llmcloud")
	build.Dir = fixture.ModuleRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: go build:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fmt.Printf("chaos: built %s in %.1fs; open-file limit %d\n", bin, time.Since(start).Seconds(), nofile)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need skips t unless the suite is switched on.
func need(t *testing.T) {
	t.Helper()
	if !enabled() {
		t.Skip("chaos suite: set LLMCLOUD_CHAOS=1 or pass -chaos")
	}
}

// stories is the small model every serving scenario uses.
func stories(t *testing.T) string {
	return fixture.Path(t, "models", "stories260K", "stories260K.bin")
}

// syncBuffer collects a process's output; safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is one running llmcloud process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	logs   *syncBuffer
	addr   string // host:port it listens on
	done   chan struct{}
	killed bool // we sent it SIGKILL: its exit status is ours, not a crash
}

var listenRE = regexp.MustCompile(`listening"? addr=(\S+)`)

// start runs bin with args and waits until it listens and GET /health answers 200. Cleanup stops it and fails t on a crash.
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startCmd(t, name, exec.Command(bin, args...))
}

// startLimited is start under `ulimit -n files`.
func startLimited(t *testing.T, name string, files int, args ...string) *proc {
	t.Helper()
	sh := append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, files), bin}, args...)
	return startCmd(t, name, exec.Command("sh", sh...))
}

func startCmd(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := listenRE.FindStringSubmatch(p.logs.String()); m != nil && p.addr == "" {
			p.addr = m[1]
		}
		if p.addr != "" && healthy(p.url()) {
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before listening: %v\n%s", name, cmd.ProcessState, p.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not answer GET /health with 200 within 30s\n%s", name, p.logs.String())
	return nil
}

func (p *proc) url() string { return "http://" + p.addr }

func (p *proc) signal(s syscall.Signal) {
	if s == syscall.SIGKILL {
		p.killed = true
	}
	p.cmd.Process.Signal(s)
}

// stop ends the process (SIGCONT, SIGTERM, SIGKILL after 10 s) and fails t if it crashed: an
// exit by a signal we did not send, or panic text in its output.
func (p *proc) stop(t *testing.T) {
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		if !p.killed {
			t.Errorf("%s: did not exit within 10s of SIGTERM\n%s", p.name, tail(p.logs.String()))
		}
	}
	if msg := crashText(p.logs.String()); msg != "" {
		t.Errorf("%s crashed: %s\n%s", p.name, msg, tail(p.logs.String()))
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && !p.killed &&
		ws.Signal() != syscall.SIGTERM {
		t.Errorf("%s: killed by %v", p.name, ws.Signal())
	}
}

// crashText is the first line of a Go panic or fatal error in out, or "".
func crashText(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") ||
			strings.HasPrefix(l, "SIGSEGV") || strings.Contains(l, "goroutine 1 [") {
			return l
		}
	}
	return ""
}

// tail is the last 3,000 bytes of s.
func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}

// runBin runs bin with args to completion (limit: timeout) and returns its combined output,
// its wall time, its peak RSS in KiB and its exit error.
func runBin(timeout time.Duration, env []string, args ...string) (string, time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	startT := time.Now()
	err := cmd.Run()
	d := time.Since(startT)
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", timeout, err)
	}
	return out.String(), d, rss, err
}

// summary logs the scenario's one-line result and prints it, so that it shows in -v and non-v
// output alike.
func summary(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log("SUMMARY " + line)
	fmt.Println("chaos SUMMARY " + line)
}

// healthy reports whether GET base/health answers 200.
func healthy(base string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(base + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
