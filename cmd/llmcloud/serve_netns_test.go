//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/internal/netdelay"
	"github.com/llmcloud/llmcloud/internal/proc"
)

var (
	listenLine = regexp.MustCompile(`msg=listening addr=(\S+)`)
	requestLog = regexp.MustCompile(`msg=request .*output_tokens=(\d+) .*ttft=(\S+) duration=(\S+)`)
	cclCount   = regexp.MustCompile(`(?m)^llmcloud_ccl_collectives_total\{op="(\w+)",result="ok"\} (\S+)$`)
)

// Two tensor-parallel ranks in two network namespaces, joined through a third where
// netdelay's bridge holds every frame 1 ms: rank 1 joins rank 0 by its address
// (--distributed-init), the greedy completion is the single process's, every step runs
// 2·layers+1 all-reduces and one all-gather (rank 0's /metrics), and a decode step takes at
// least their 2·(2·layers+1)+1 one-way trips of 1 ms (rounds of the two-rank all-reduce and
// all-gather; docs/distributed-serving.md has the full model and scripts/tp-netns.sh the
// measurement).
func TestServeTensorParallelNetns(t *testing.T) {
	strict := netdelay.NamespacePolicy(t)
	const layers, delay, n = 2, time.Millisecond, 12
	path := filepath.Join(t.TempDir(), "m.gguf")
	run(t, "synth", "-o", path, "--dim", "64", "--layers", strconv.Itoa(layers), "--heads", "8", "--kv-heads", "4",
		"--ffn", "128", "--vocab", "264", "--seed", "11", "--std", "0.08")
	url, _, stop := startServe(t, path, "--threads", "1")
	want := greedy(t, url, "hello world", n)
	stop()

	l, err := netdelay.NewLink(fmt.Sprintf("ts%d", os.Getpid()%100000))
	if err != nil {
		if !strict {
			t.Skipf("cannot make network namespaces here: %v", err)
		}
		t.Fatal(err)
	}
	defer l.Close()
	br, err := l.Bridge(delay)
	if err != nil {
		t.Fatal(err)
	}
	bdone := make(chan error, 1)
	go func() { bdone <- br.Run() }()
	defer func() {
		br.Close()
		if err := <-bdone; err != nil {
			t.Error(err)
		}
	}()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logs := [2]*proc.Buffer{{}, {}}
	var cmds []*exec.Cmd
	defer func() { // rank 0 first: it stops rank 1
		for _, cmd := range cmds {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}
	}()
	for r, ns := range []string{l.A, l.B} {
		cmd := exec.Command("ip", "netns", "exec", ns, exe, "serve", path, "-tp", "2", "--threads", "1",
			"--distributed-init", "10.78.0.1:29511", "--rank", strconv.Itoa(r), "--host", "127.0.0.1", "--port", "0")
		cmd.Env = append(os.Environ(), asMainEnv+"=1")
		cmd.Stdout, cmd.Stderr = logs[r], logs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = netdelay.InNetns(l.A, func() (err error) { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return err })
			return c, err
		}}}
	var base string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := listenLine.FindStringSubmatch(logs[0].String()); m != nil && strings.Contains(logs[0].String(), "msg=ready") {
			base = "http://" + m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("rank 0 not ready:\n%s\nrank 1:\n%s", logs[0].String(), logs[1].String())
	}
	counts := func() map[string]float64 {
		resp, err := client.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		c := map[string]float64{}
		for _, m := range cclCount.FindAllStringSubmatch(string(b), -1) {
			c[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
		return c
	}
	before := counts()
	body := `{"prompt":"hello world","max_tokens":` + itoa(n) + `,"temperature":0,"ignore_eos":true,"logprobs":0}`
	resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var c api.CompletionResponse
	err = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if err != nil || len(c.Choices) != 1 || c.Choices[0].Logprobs == nil {
		t.Fatalf("completion: %v %+v", err, c)
	}
	after := counts()
	if got := c.Choices[0].Logprobs.Tokens; c.Choices[0].Text != want.text || strings.Join(got, "|") != strings.Join(want.tokens, "|") {
		t.Errorf("across namespaces: %q, the single process: %q", got, want.tokens)
	}
	if d := after["allreduce"] - before["allreduce"]; d != float64((2*layers+1)*n) {
		t.Errorf("%v all-reduces for %d steps, want %d a step", d, n, 2*layers+1)
	}
	if d := after["allgather"] - before["allgather"]; d != n {
		t.Errorf("%v all-gathers for %d steps, want one a step", d, n)
	}
	m := requestLog.FindStringSubmatch(logs[0].String())
	if m == nil {
		t.Fatalf("no request log line:\n%s", logs[0].String())
	}
	ttft, err1 := time.ParseDuration(m[2])
	dur, err2 := time.ParseDuration(m[3])
	if err1 != nil || err2 != nil {
		t.Fatalf("request log line %q", m[0])
	}
	step := (dur - ttft) / (n - 1)
	rounds := 2*(2*layers+1) + 1
	t.Logf("decode step %v across a %v link (%d one-way trips a step)", step, delay, rounds)
	if step < time.Duration(rounds)*delay {
		t.Errorf("decode step %v, less than its %d one-way trips of %v: a collective did not cross the link", step, rounds, delay)
	}
}
