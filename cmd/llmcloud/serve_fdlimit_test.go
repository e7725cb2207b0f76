// serve_fdlimit_test.go runs `serve` in a child process under a 256 file limit and opens far
// more idle connections than that: normal requests keep succeeding, the idle connections are
// closed on time, and the log shows no "too many open files".
package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/internal/proc"
)

func TestServeFileLimit(t *testing.T) {
	if args := os.Getenv("LLMCLOUD_FDLIMIT_CHILD"); args != "" {
		os.Exit(runMain(strings.Fields(args), os.Stdout, os.Stderr))
	}
	if testing.Short() {
		t.Skip("opens 600 connections")
	}
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	// Lower the hard limit too: Go raises the soft one to the hard one at start.
	cmd := exec.Command("sh", "-c", `ulimit -Sn 256 && ulimit -Hn 256 && exec "$0" -test.run='^TestServeFileLimit$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "LLMCLOUD_FDLIMIT_CHILD=serve --model "+model+
		" --host 127.0.0.1 --port 0 --threads 1 --api-key k --read-timeout 1s --idle-timeout 1s")
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
	addr := ""
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatal("no listening line")
	}
	var logs proc.Buffer
	go io.Copy(&logs, stderr)
	url := "http://" + addr
	waitHealthy(t, url)

	// 500 silent connections and 100 slow bodies, against a limit of 256 files.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 600 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		if i%6 == 0 {
			io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Length: 999\r\n\r\n{")
		}
		conns = append(conns, c)
	}
	// A new connection for each request, behind the flood in the backlog.
	cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 3 {
		start := time.Now()
		req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(`{"prompt":"Once","max_tokens":4}`))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("request %d with 600 idle and slow connections open: %v\n%s", i, err, logs.String())
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		t.Logf("request %d served in %v", i, time.Since(start).Round(time.Millisecond))
	}
	// Every idle connection has been closed by the server by now (1 s timeouts, waves of
	// 192 connections).
	deadline := time.Now().Add(30 * time.Second) // 4 waves of 1 s timeouts; slack for a loaded 2-vCPU host
	open := 0
	for _, c := range conns {
		c.SetReadDeadline(deadline)
		// EOF (nil here) or a reset (the server closed a connection with our unread body
		// in its buffer) both mean closed; only the deadline means still open.
		var ne net.Error
		if _, err := io.Copy(io.Discard, c); errors.As(err, &ne) && ne.Timeout() {
			open++
		}
	}
	if open > 0 {
		t.Errorf("%d of 600 connections still open", open)
	}
	if strings.Contains(logs.String(), "too many open files") {
		t.Errorf("the server ran out of files:\n%s", logs.String())
	}
}
