// Connection scenario: `serve --api-key` under a 1,024 open-file limit gets 2,000 idle
// connections (some after one keep-alive request, most never sending a byte) and 300 slow-body
// connections (a wrong key, Content-Length 1000, a byte a second) while a normal request every
// 100 ms must keep succeeding; every hostile connection must be closed by the server on time.
package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	keepAliveConns = 500  // idle after one completed request
	silentConns    = 1500 // never send a byte
	slowConns      = 300  // a byte of body a second
	connTimeout    = 3 * time.Second
)

// watched is one hostile connection: when it was opened and when the server closed it.
type watched struct {
	kind           string
	opened, closed time.Time // closed zero: still open at the end
	answered       string    // status line of a response, if any
}

func TestChaosConnections(t *testing.T) {
	need(t)
	if nofile < 4096 {
		t.Skipf("open-file hard limit %d < 4096: cannot hold 2,300 client connections", nofile)
	}
	srv := startLimited(t, "serve", 1024, "serve", stories(t), "--host", "127.0.0.1", "--port", "0",
		"--api-key", "K", "--idle-timeout", connTimeout.String(), "--read-timeout", connTimeout.String())

	// Normal requests every 100 ms, each on a new connection with a 5 s limit.
	stop := make(chan struct{})
	var normal struct {
		sync.Mutex
		ok, failed int
		slowest    time.Duration
		failures   []string
	}
	begin := time.Now()
	var normalWG sync.WaitGroup
	normalWG.Add(1)
	go func() {
		defer normalWG.Done()
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		var wg sync.WaitGroup
		defer wg.Wait()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				err := authedCompletion(client, srv.url())
				d := time.Since(t0)
				normal.Lock()
				defer normal.Unlock()
				normal.slowest = max(normal.slowest, d)
				if err != nil {
					normal.failed++
					if len(normal.failures) < 5 {
						normal.failures = append(normal.failures, fmt.Sprintf("sent at %v, failed after %v: %v",
							t0.Sub(begin).Round(time.Millisecond), d.Round(time.Millisecond), err))
					}
					return
				}
				normal.ok++
			}()
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		normalWG.Wait()
	}()

	var (
		mu      sync.Mutex
		conns   []*watched
		wg      sync.WaitGroup
		dialErr atomic.Int64
	)
	watch := func(kind string, setup func(c net.Conn, br *bufio.Reader, w *watched)) {
		c, err := net.DialTimeout("tcp", srv.addr, 5*time.Second)
		if err != nil {
			dialErr.Add(1)
			return
		}
		w := &watched{kind: kind, opened: time.Now()}
		mu.Lock()
		conns = append(conns, w)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			br := bufio.NewReader(c)
			if setup != nil {
				setup(c, br, w)
			}
			if _, err := io.Copy(io.Discard, br); err != nil && strings.Contains(err.Error(), "timeout") {
				return // still open after 60 s
			}
			w.closed = time.Now()
		}()
	}
	t.Logf("hostile connections start %v after the normal requests", time.Since(begin).Round(time.Millisecond))
	t0 := time.Now()
	for range keepAliveConns {
		watch("keep-alive", func(c net.Conn, br *bufio.Reader, w *watched) {
			fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: chaos\r\n\r\n")
			if resp, err := http.ReadResponse(br, nil); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				w.answered = resp.Status
			}
		})
	}
	for range silentConns {
		watch("silent", nil)
	}
	for range slowConns {
		watch("slow-body", func(c net.Conn, br *bufio.Reader, w *watched) {
			fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: chaos\r\nAuthorization: Bearer wrong\r\n"+
				"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
			go func() { // a byte a second until the server closes the connection
				for range 60 {
					time.Sleep(time.Second)
					if _, err := c.Write([]byte{' '}); err != nil {
						return
					}
				}
			}()
		})
	}
	opened := time.Since(t0)
	t.Logf("opened %d keep-alive, %d silent, %d slow-body connections in %v (%d dials failed)",
		keepAliveConns, silentConns, slowConns, opened.Round(time.Millisecond), dialErr.Load())
	wg.Wait()
	close(stop)
	normalWG.Wait()

	byKind := map[string][]time.Duration{}
	open, answered := map[string]int{}, map[string]int{}
	for _, w := range conns {
		if w.answered != "" {
			answered[w.kind]++
		}
		if w.closed.IsZero() {
			open[w.kind]++
			continue
		}
		byKind[w.kind] = append(byKind[w.kind], w.closed.Sub(w.opened))
	}
	var lastClose time.Duration
	for _, kind := range []string{"keep-alive", "silent", "slow-body"} {
		d := byKind[kind]
		slices.Sort(d)
		if len(d) == 0 {
			t.Errorf("%s: none closed", kind)
			continue
		}
		lastClose = max(lastClose, d[len(d)-1])
		t.Logf("%s: %d closed (%d got a response), %d still open after 60s; closed after median %v, max %v",
			kind, len(d), answered[kind], open[kind], d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	t.Logf("normal requests: %d ok, %d failed, slowest %v", normal.ok, normal.failed, normal.slowest.Round(time.Millisecond))
	for _, f := range normal.failures {
		t.Logf("  normal failure %s", f)
	}
	total := len(conns)
	if n := open["keep-alive"] + open["silent"] + open["slow-body"]; n > 0 || dialErr.Load() > 0 {
		t.Errorf("%d connections never closed by the server, %d dials failed", n, dialErr.Load())
	}
	// Beyond the connection cap (the file limit less 64) connections wait in the backlog; each
	// wave of accepted ones is closed after the timeout, so allow three waves plus slack.
	if limit := opened + 3*connTimeout + 5*time.Second; lastClose > limit {
		t.Errorf("last connection closed after %v, want within %v", lastClose, limit)
	}
	if normal.failed > 0 || normal.ok == 0 {
		t.Errorf("normal requests: %d failed, %d ok", normal.failed, normal.ok)
	}
	summary(t, "connections: %d hostile connections opened in %v, all closed by the server within %v of opening; normal requests %d ok, %d failed, slowest %v",
		total, opened.Round(time.Millisecond), lastClose.Round(time.Millisecond), normal.ok, normal.failed, normal.slowest.Round(time.Millisecond))
}

// authedCompletion is one normal request with the right key.
func authedCompletion(client *http.Client, base string) error {
	req, _ := http.NewRequest("POST", base+"/v1/completions",
		strings.NewReader(`{"prompt":"Once upon a time","max_tokens":8}`))
	req.Header.Set("Authorization", "Bearer K")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
