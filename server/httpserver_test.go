// httpserver_test.go checks the connection bounds of NewHTTPServer and LimitListener over real
// TCP: idle keep-alives closed, slow bodies cut, the connection cap held, streams not cut.
package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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

// At the cap, silent connections (accepted, no byte sent) give way to new ones, oldest first:
// a request arriving behind limit+4 of them is served at once, and the server never holds more
// than limit connections.
func TestHTTPConnectionCapEvictsSilent(t *testing.T) {
	const limit = 8
	addr := startBounded(t, echoBody(), HTTPOptions{MaxConnections: limit, ReadTimeout: 5 * time.Second})
	var silent []net.Conn
	for range limit + 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
		time.Sleep(5 * time.Millisecond) // distinct ages
	}
	start := time.Now()
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Post("http://"+addr+"/", "text/plain", strings.NewReader("ok"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
	served := time.Since(start)
	if served > 2*time.Second {
		t.Fatalf("served after %v behind silent connections, want at once", served)
	}
	closed := 0
	for i, c := range silent {
		if closedWithin(c, 100*time.Millisecond) {
			closed++
		} else if i < 4 {
			t.Errorf("silent connection %d (among the oldest) still open", i)
		}
	}
	// 12 silent + the client's: at most 8 open, so at least 5 silent ones were closed.
	if closed < 5 {
		t.Fatalf("%d silent connections closed, want at least 5", closed)
	}
	t.Logf("served after %v; %d of %d silent connections closed", served, closed, len(silent))
}

// When every slot runs a request, a new connection waits for one to finish (busy connections
// are never closed to make room).
func TestHTTPConnectionCapWaitsWhenBusy(t *testing.T) {
	const limit = 4
	release := make(chan struct{})
	var started atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			started.Add(1)
			<-release
		}
		io.WriteString(w, "ok")
	})
	addr := startBounded(t, h, HTTPOptions{MaxConnections: limit, ReadTimeout: 5 * time.Second})
	var wg sync.WaitGroup
	for range limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/block")
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	for started.Load() < limit {
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("served while %d requests held every slot (err %v)", limit, err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("after the busy requests ended: %v", err)
	}
	wg.Wait()
}
