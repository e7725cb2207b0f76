// httpserver_test.go checks the connection bounds of NewHTTPServer and LimitListener over real
// TCP: idle keep-alives closed, slow bodies cut, the connection cap held, streams not cut.
package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func startBounded(t *testing.T, h http.Handler, o HTTPOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(h, o)
	go hs.Serve(LimitListener(ln, o))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

func echoBody() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Write(b)
	})
}

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return err == nil // EOF: closed by the server; a timeout error: still open
}

func TestHTTPIdleKeepAliveClosed(t *testing.T) {
	addr := startBounded(t, echoBody(), HTTPOptions{IdleTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	start := time.Now()
	if !closedWithin(c, 3*time.Second) {
		t.Fatal("idle keep-alive connection still open after 3 s with IdleTimeout 200 ms")
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", el)
	}
}

func TestHTTPSlowBodyCut(t *testing.T) {
	addr := startBounded(t, echoBody(), HTTPOptions{ReadTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
	start := time.Now()
	if !closedWithin(c, 3*time.Second) {
		t.Fatal("slow body still open after 3 s with ReadTimeout 300 ms")
	}
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("cut after %v, before the read timeout", el)
	}
}

// A response streamed for longer than ReadTimeout after a fully read body is not cut, and its
// request context is not cancelled.
func TestHTTPStreamOutlivesReadTimeout(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		for i := range 8 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			io.WriteString(w, strings.Repeat("x", i+1)+"\n")
			w.(http.Flusher).Flush()
		}
	})
	addr := startBounded(t, h, HTTPOptions{ReadTimeout: 200 * time.Millisecond, IdleTimeout: time.Second})
	resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader("go"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || strings.Count(string(b), "\n") != 8 {
		t.Fatalf("stream cut: %d lines, err %v", strings.Count(string(b), "\n"), err)
	}
}

func TestHTTPConnectionCap(t *testing.T) {
	const limit = 8
	addr := startBounded(t, echoBody(), HTTPOptions{MaxConnections: limit, IdleTimeout: 300 * time.Millisecond,
		ReadTimeout: 5 * time.Second})
	var idle []net.Conn
	for range limit + 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// The idle connections hold every slot: a request waits in the backlog...
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		cl := &http.Client{Timeout: 10 * time.Second}
		resp, err := cl.Post("http://"+addr+"/", "text/plain", strings.NewReader("ok"))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "ok" {
				err = io.ErrUnexpectedEOF
			}
		}
		done <- err
	}()
	// ...until the server's header timeout (ReadHeaderTimeout = min(10 s, ReadTimeout) = 5 s)
	// closes idle ones; shorten by closing them ourselves after a while.
	select {
	case err := <-done:
		t.Fatalf("request served while %d connections held %d slots (err %v)", limit+4, limit, err)
	case <-time.After(300 * time.Millisecond):
	}
	for _, c := range idle {
		c.Close()
	}
	if err := <-done; err != nil {
		t.Fatalf("request after the idle connections closed: %v", err)
	}
	t.Logf("served after %v", time.Since(start))
}
