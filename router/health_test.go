package router

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/router/routertest"
)

// waitFor polls cond every 5 ms until it holds or limit passes; it returns the time it took.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	t0 := time.Now()
	for !cond() {
		if time.Since(t0) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(t0)
}

func healthyOf(r *Router, i int) bool { return r.Backends()[i].Healthy }

func TestHealthEjectionAndRecovery(t *testing.T) {
	a, b := routertest.New("a", 1, 0), routertest.New("b", 1, 0)
	r, front, srvs := start(t, Options{}, a, b) // default HealthInterval: 1s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	ia := 0 // a's index in the status, which is sorted by URL
	if r.Backends()[1].URL == srvs[0].URL {
		ia = 1
	}
	up := waitFor(t, 2*time.Second, "first probe", func() bool { return healthyOf(r, 0) && healthyOf(r, 1) })
	t.Logf("both up after %v", up)

	// A failing /health ejects within one interval; traffic then avoids it.
	a.SetHealthy(false)
	down := waitFor(t, 2*time.Second, "ejection", func() bool { return !healthyOf(r, ia) })
	t.Logf("ejected after %v", down)
	before := a.Requests()
	for range 6 {
		resp, err := http.Post(front.URL+"/v1/completions", "application/json", strings.NewReader(streamBody))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if a.Requests() != before {
		t.Fatalf("ejected backend got %d requests", a.Requests()-before)
	}
	resp, _ := http.Get(front.URL + "/health")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("router /health %d with one backend up", resp.StatusCode)
	}
	a.SetHealthy(true)
	back := waitFor(t, 2*time.Second, "recovery", func() bool { return healthyOf(r, ia) })
	t.Logf("back after %v", back)

	// A dead process (connection refused) is ejected by the next probe, without traffic.
	srvs[0].Close()
	srvs[1].Close()
	waitFor(t, 2*time.Second, "ejection of closed servers", func() bool { return !healthyOf(r, 0) && !healthyOf(r, 1) })
	resp, _ = http.Get(front.URL + "/health")
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("router /health %d with no backend up", resp.StatusCode)
	}
}

func TestSetBackendsKeepsStateAndIsConcurrent(t *testing.T) {
	var bes []*routertest.Backend
	var hs []http.Handler
	for i := range 4 {
		be := routertest.New(fmt.Sprint(i), 2, 0)
		bes = append(bes, be)
		hs = append(hs, be)
	}
	r, front, srvs := start(t, Options{Policy: LeastLoad, HealthInterval: 20 * time.Millisecond}, hs...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 2*time.Second, "first probe", func() bool {
		for _, s := range r.Backends() {
			if !s.Healthy {
				return false
			}
		}
		return true
	})
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.URL)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // flip between subsets that always hold urls[0]
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r.SetBackends(append([]string{urls[0]}, urls[1+i%3:]...))
			r.Backends()
			time.Sleep(time.Millisecond)
		}
	})
	var failed sync.Map
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				resp, err := http.Post(front.URL+"/v1/completions", "application/json", strings.NewReader(streamBody))
				if err != nil {
					failed.Store(fmt.Sprint(w, i), err.Error())
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Store(fmt.Sprint(w, i), resp.Status)
				}
			}
		})
	}
	// Let the requests finish, then stop flipping.
	for {
		n := int64(0)
		for _, be := range bes {
			n += be.Requests()
		}
		if n >= 200 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	failed.Range(func(k, v any) bool { t.Errorf("request %v: %v", k, v); return true })

	// A backend that stays keeps its counters and health (the probes are stopped first, so
	// they cannot change the health between the snapshots).
	cancel()
	<-done
	done <- nil // for the deferred receive
	r.SetBackends(urls)
	st := r.Backends()
	r.SetBackends(urls[:2])
	st2 := r.Backends()
	if len(st2) != 2 {
		t.Fatalf("%d backends", len(st2))
	}
	for _, s := range st2 {
		for _, o := range st {
			if o.URL == s.URL && (o.Requests != s.Requests || o.Healthy != s.Healthy) {
				t.Fatalf("state lost: %+v became %+v", o, s)
			}
		}
	}
}
