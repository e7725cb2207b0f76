// Replica scenarios: three `serve` replicas behind `router` under 20 requests a second, one of
// them SIGKILLed (TestChaosKill) or SIGSTOPped (TestChaosFrozen, the acceptance scenario of
// issue 17: no request hangs, non-streamed ones all succeed, the frozen replica is out of
// rotation within 2 s).
package chaos

import (
	"encoding/json"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// cluster starts n replicas of the small model and a router in front of them.
func cluster(t *testing.T, n int) (replicas []*proc, router *proc) {
	t.Helper()
	var args []string
	for i := range n {
		p := start(t, "replica "+string(rune('A'+i)), "serve", stories(t), "--host", "127.0.0.1", "--port", "0")
		replicas = append(replicas, p)
		args = append(args, "--backend", p.url())
	}
	// The router's defaults: its timeouts and ejection must do without tuning.
	args = append([]string{"router", "--host", "127.0.0.1", "--port", "0"}, args...)
	router = start(t, "router", args...)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := routerStatus(router.url()); err == nil && countHealthy(st) == n {
			return replicas, router
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("router did not see %d healthy replicas within 10s\n%s", n, router.logs.String())
	return nil, nil
}

type backendStatus struct {
	URL      string `json:"url"`
	Healthy  bool   `json:"healthy"`
	Inflight int    `json:"inflight"`
}

// whenBusy waits (at most 2 s) until the router has a request in flight to url, so that a
// signal sent next cuts one.
func whenBusy(base, url string) {
	for t0 := time.Now(); time.Since(t0) < 2*time.Second; time.Sleep(5 * time.Millisecond) {
		st, _ := routerStatus(base)
		for _, b := range st {
			if b.URL == url && b.Inflight > 0 {
				return
			}
		}
	}
}

func routerStatus(base string) ([]backendStatus, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "/router/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v struct{ Backends []backendStatus }
	err = json.NewDecoder(resp.Body).Decode(&v)
	return v.Backends, err
}

func countHealthy(st []backendStatus) int {
	n := 0
	for _, b := range st {
		if b.Healthy {
			n++
		}
	}
	return n
}

// untilUnhealthy polls the router every 50 ms until it reports url unhealthy (limit: 10 s) and
// returns the time that took, or -1.
func untilUnhealthy(base, url string, since time.Time) time.Duration {
	for time.Since(since) < 10*time.Second {
		st, _ := routerStatus(base)
		for _, b := range st {
			if b.URL == url && !b.Healthy {
				return time.Since(since)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return -1
}

func TestChaosKill(t *testing.T) {
	need(t)
	replicas, router := cluster(t, 3)
	victim := replicas[1]
	var ejected time.Duration
	outs := runLoad(router.url(), 20, 10*time.Second, 15*time.Second, 3*time.Second, func() {
		whenBusy(router.url(), victim.url())
		victim.signal(syscall.SIGKILL)
		ejected = untilUnhealthy(router.url(), victim.url(), time.Now())
	})
	s := summarize(outs)
	logLoad(t, "kill", s)
	t.Logf("SIGKILL of %s at 3s of 10s at 20 req/s (with a request in flight to it); router marked it unhealthy after %v", victim.url(), ejected)
	if s.Hung > 0 || s.NonStreamedOK != s.NonStreamed || s.Sent < 150 {
		t.Errorf("want 0 hung and every non-streamed request to succeed: %v", s)
	}
	if ejected < 0 {
		t.Errorf("killed replica never marked unhealthy")
	}
	summary(t, "kill: %d sent, %d non-streamed ok of %d, %d streams ok + %d error events of %d, %d failed, %d hung, slowest %v, ejected after %v",
		s.Sent, s.NonStreamedOK, s.NonStreamed, s.StreamedOK, s.StreamedErrEvent, s.Streamed, s.Failed, s.Hung,
		s.Slowest.Round(time.Millisecond), ejected.Round(time.Millisecond))
}

func TestChaosFrozen(t *testing.T) {
	need(t)
	replicas, router := cluster(t, 3)
	victim := replicas[2]
	t.Cleanup(func() { victim.signal(syscall.SIGCONT); victim.signal(syscall.SIGKILL) })
	var ejected time.Duration
	outs := runLoad(router.url(), 20, 30*time.Second, 15*time.Second, 10*time.Second, func() {
		whenBusy(router.url(), victim.url())
		victim.signal(syscall.SIGSTOP)
		ejected = untilUnhealthy(router.url(), victim.url(), time.Now())
	})
	s := summarize(outs)
	logLoad(t, "frozen", s)
	t.Logf("SIGSTOP of %s at 10s of 30s at 20 req/s (with a request in flight to it); router marked it unhealthy after %v", victim.url(), ejected)
	if s.Hung > 0 {
		t.Errorf("%d requests hung (client timeout 15s)", s.Hung)
	}
	if s.NonStreamedOK != s.NonStreamed {
		t.Errorf("%d of %d non-streamed requests failed", s.NonStreamed-s.NonStreamedOK, s.NonStreamed)
	}
	if s.Failed > 0 {
		t.Errorf("%d requests neither completed nor ended with an error event", s.Failed)
	}
	if ejected < 0 || ejected > 2*time.Second {
		t.Errorf("frozen replica out of rotation after %v, want within 2s", ejected)
	}
	summary(t, "frozen: %d sent, %d non-streamed ok of %d, %d streams ok + %d error events of %d, %d failed, %d hung, slowest %v, ejected after %v",
		s.Sent, s.NonStreamedOK, s.NonStreamed, s.StreamedOK, s.StreamedErrEvent, s.Streamed, s.Failed, s.Hung,
		s.Slowest.Round(time.Millisecond), ejected.Round(time.Millisecond))
}
