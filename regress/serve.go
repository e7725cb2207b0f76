package regress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ServeSuite is a short `bench serve` against `serve` of the same binary on the built-in
// default model: a server started for the round on a free local port, 32 random requests of 64
// prompt and 32 output tokens (EOS ignored) sent all at once by the binary's own client, the
// server stopped. Its figures: output tokens/s (higher is better), median TTFT and median TPOT
// in ms (higher is worse).
func ServeSuite(threads int) Suite {
	return Suite{
		Name:   "serve",
		Server: []string{"serve", "--host", "127.0.0.1", "--port", "{port}", "--threads", strconv.Itoa(threads)},
		Args: []string{"bench", "serve", "--port", "{port}", "--num-prompts", "32", "--random-input-len", "64",
			"--random-output-len", "32", "--ignore-eos", "--seed", "1", "--save-result", "--result-dir", "{tmp}", "--result-filename", "serve.json"},
		ResultFile: "serve.json",
		Parse:      parseServeJSON,
	}
}

func parseServeJSON(out []byte) (*SuiteResult, error) {
	var r struct {
		Completed        int     `json:"completed"`
		Failed           int     `json:"failed"`
		OutputThroughput float64 `json:"output_throughput"`
		MedianTTFT       float64 `json:"median_ttft_ms"`
		MedianTPOT       float64 `json:"median_tpot_ms"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("bench serve's result JSON: %v", err)
	}
	if r.Failed > 0 || r.Completed == 0 || !(r.OutputThroughput > 0 && r.MedianTTFT > 0 && r.MedianTPOT > 0) {
		return nil, fmt.Errorf("bench serve: %d completed, %d failed, output %g tok/s, median TTFT %g ms, TPOT %g ms: want every request served and positive figures",
			r.Completed, r.Failed, r.OutputThroughput, r.MedianTTFT, r.MedianTPOT)
	}
	return &SuiteResult{Suite: "serve", Benchmarks: []Benchmark{
		{Name: "serve/output throughput", Kernel: "serve", Unit: "tok/s", Value: r.OutputThroughput, HigherIsBetter: true},
		{Name: "serve/median TTFT", Kernel: "serve", Unit: "ms", Value: r.MedianTTFT},
		{Name: "serve/median TPOT", Kernel: "serve", Unit: "ms", Value: r.MedianTPOT},
	}}, nil
}

// freePort is a local TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts bin with args and waits until GET /health on port answers 200; the
// returned function stops it (SIGTERM, then SIGKILL after 10 s) and waits for it.
func startServer(ctx context.Context, bin string, args []string, port int) (func(), error) {
	var errb lockedBuffer // the server writes it while the wait below may read it
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("regress: %s %s: %v", bin, strings.Join(args, " "), err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop, nil
			}
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("regress: %s %s exited before serving: %s", bin, strings.Join(args, " "), strings.TrimSpace(lastLines(errb.String(), 5)))
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("regress: %s %s: no 200 from %s within 60 s: %s", bin, strings.Join(args, " "), url, strings.TrimSpace(lastLines(errb.String(), 5)))
		}
	}
}

// expand replaces {port} and {tmp} in args.
func expand(args []string, port int, tmp string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, "{port}", strconv.Itoa(port))
		out[i] = strings.ReplaceAll(a, "{tmp}", tmp)
	}
	return out
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
