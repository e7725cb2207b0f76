package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/internal/proc"
)

// waitHealthy polls /health until 200.
func waitHealthy(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("server never became healthy")
}

// streamCompletion starts a streamed completion and returns its reader after the first event.
func streamCompletion(t *testing.T, url string, maxTokens int) *api.SSEReader {
	t.Helper()
	body := `{"prompt":"Once upon a time","max_tokens":` + itoa(maxTokens) + `,"ignore_eos":true,"stream":true}`
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	t.Cleanup(func() { resp.Body.Close() })
	r := api.NewSSEReader(resp.Body)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	return r
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// finishReason reads the stream to [DONE] and returns the last finish reason.
func finishReason(t *testing.T, r *api.SSEReader) string {
	t.Helper()
	reason := ""
	for {
		data, err := r.Next()
		if err == api.ErrDone {
			return reason
		}
		if err != nil {
			t.Fatalf("stream ended without [DONE]: %v", err)
		}
		var c api.CompletionResponse
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				reason = *ch.FinishReason
			}
		}
	}
}

// Shutdown (the context ends, as on SIGTERM) lets a running request finish.
func TestServeShutdownDrains(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() {
		done <- serve(ctx, []string{model, "--host", "127.0.0.1", "--port", "0", "--served-model-name", "s",
			"--max-model-len", "256", "--max-num-seqs", "8", "--block-size", "16", "--no-enable-prefix-caching",
			"--seed", "1", "--threads", "1", "--shutdown-timeout", "20", "--generation-config", "vllm"}, &logs, func(a string) { addrc <- a })
	}()
	url := "http://" + <-addrc
	waitHealthy(t, url)
	r := streamCompletion(t, url, 200)
	cancel()
	if got := finishReason(t, r); got != "length" {
		t.Fatalf("the running request ended with %q, want length", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "msg=request") {
		t.Errorf("no request log line in:\n%s", logs.String())
	}
}

// A real SIGTERM on a real process: exit status 0 after the running request finished.
func TestServeSIGTERM(t *testing.T) {
	if os.Getenv("LLMCLOUD_SERVE_CHILD") != "" {
		os.Exit(runMain(strings.Fields(os.Getenv("LLMCLOUD_SERVE_CHILD")), os.Stdout, os.Stderr))
	}
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeSIGTERM$")
	cmd.Env = append(os.Environ(), "LLMCLOUD_SERVE_CHILD=serve --model "+model+" --host 127.0.0.1 --port 0 --threads 1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`msg=listening addr=(\S+)`)
	var url string
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			url = "http://" + m[1]
			break
		}
	}
	if url == "" {
		t.Fatal("no listening line")
	}
	go io.Copy(io.Discard, stderr)
	waitHealthy(t, url)
	r := streamCompletion(t, url, 300)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := finishReason(t, r); got != "length" {
		t.Fatalf("finish reason %q", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	// New connections are refused once it has stopped.
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("still accepting after SIGTERM")
	}
}

// startServe runs `llmcloud serve` with args (plus a loopback host and a free port) in this
// process and returns its URL once /health answers, its log, and stop, which ends the server
// (as SIGTERM does) and returns serve's error. The server is stopped when the test ends.
func startServe(t *testing.T, args ...string) (url string, logs *proc.Buffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	logs = &proc.Buffer{}
	go func() {
		done <- serve(ctx, append([]string{"--host", "127.0.0.1", "--port", "0"}, args...), logs,
			func(a string) { addrc <- a })
	}()
	select {
	case a := <-addrc:
		url = "http://" + a
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { stop() })
	waitHealthy(t, url)
	return url, logs, stop
}
