// serve_http_test.go checks that serve's connection flags reach the server: --idle-timeout,
// --read-timeout, --max-connections, --api-key with --protect-all.
package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestServeHTTPFlags(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	url, _, stop := startServe(t, model, "--threads", "1", "--max-model-len", "256", "--api-key", "k",
		"--protect-all", "--idle-timeout", "200ms", "--read-timeout", "300ms", "--max-connections", "6")
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	addr := strings.TrimPrefix(url, "http://")

	get := func(path, auth string) int {
		req, _ := http.NewRequest("GET", url+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/metrics", ""); c != 401 {
		t.Errorf("/metrics without the key under --protect-all: %d", c)
	}
	if c := get("/v1/models", "bearer k"); c != 200 {
		t.Errorf("/v1/models with a lower-case scheme: %d", c)
	}
	if c := get("/v1/unknown", ""); c != 401 {
		t.Errorf("unknown /v1 path without the key: %d", c)
	}

	// A slow body and an idle connection are both closed within a second.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Length: 100\r\n\r\n{")
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
	for name, c := range map[string]net.Conn{"slow body": slow, "idle keep-alive": idle} {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("%s: not closed by the server: %v", name, err)
		}
	}

	// More silent connections than --max-connections: a request waits, then succeeds once
	// they are gone.
	var held []net.Conn
	for range 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		for _, c := range held {
			c.Close()
		}
	}()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once","max_tokens":4}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("request after the cap cleared: %d, want 401 (no key)", resp.StatusCode)
	}
}
