package router

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/router/routertest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// backendEnv makes the test binary a backend process (see TestMain): it serves a
// routertest.Backend on a loopback port, prints the port, and exits when its stdin closes.
const backendEnv = "LLMCLOUD_ROUTER_TEST_BACKEND"

func TestMain(m *testing.M) {
	if name := os.Getenv(backendEnv); name != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		be := routertest.New(name, 10, 5*time.Millisecond)
		be.TTFT = 30 * time.Millisecond
		fmt.Printf("http://%s\n", ln.Addr())
		go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }() // the parent is gone
		http.Serve(ln, be)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startBackendProcess runs the test binary as a backend process called name.
func startBackendProcess(t *testing.T, name string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), backendEnv+"="+name)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("backend %s: %v", name, err)
	}
	return cmd, strings.TrimSpace(line)
}

// TestSIGKILLMidRun is issue 7's acceptance check: a replica SIGKILLed under load costs no
// request that had not started streaming, and stops receiving traffic within 2 s.
func TestSIGKILLMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	var urls []string
	var victim *exec.Cmd
	for i := range 3 {
		cmd, u := startBackendProcess(t, fmt.Sprint("p", i))
		urls = append(urls, u)
		if i == 0 {
			victim = cmd
		}
	}
	r, front, _ := start(t, Options{Policy: LeastLoad})
	r.SetBackends(urls)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 5*time.Second, "backends up", func() bool {
		for _, s := range r.Backends() {
			if !s.Healthy {
				return false
			}
		}
		return true
	})
	attempts := func() int64 { // upstream attempts to the victim so far
		for _, s := range r.Backends() {
			if s.URL == urls[0] {
				return s.Requests
			}
		}
		return -1
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var ok, beforeStream, cut atomic.Int64
	var firstErr atomic.Value
	runFor := 3 * time.Second
	t0 := time.Now()
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			for time.Since(t0) < runFor {
				resp, err := client.Post(front.URL+"/v1/completions", "application/json", strings.NewReader(streamBody))
				if err != nil {
					beforeStream.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode != 200 || (err != nil && n == 0):
					beforeStream.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprint(resp.Status, " ", err))
				case err != nil:
					cut.Add(1)
				default:
					ok.Add(1)
				}
			}
		})
	}
	time.Sleep(time.Second)
	killAt := time.Now()
	before := attempts()
	victim.Process.Signal(syscall.SIGKILL)
	// Record when the victim last got an attempt.
	last, lastAt := before, killAt
	for time.Since(t0) < runFor {
		if a := attempts(); a != last {
			last, lastAt = a, time.Now()
		}
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("ok %d, failed before streaming %d, cut mid-stream %d; victim: %d attempts before the kill, %d after, the last %v after it; retries %v",
		ok.Load(), beforeStream.Load(), cut.Load(), before, last-before, lastAt.Sub(killAt), testutil.ToFloat64(r.m.retries))
	if n := beforeStream.Load(); n != 0 {
		t.Errorf("%d requests failed before streaming (first: %v)", n, firstErr.Load())
	}
	if d := lastAt.Sub(killAt); d > 2*time.Second {
		t.Errorf("the killed replica got traffic %v after the kill", d)
	}
	if ok.Load() < 100 || before == 0 {
		t.Errorf("too little load: %d ok, %d to the victim before the kill", ok.Load(), before)
	}
}
