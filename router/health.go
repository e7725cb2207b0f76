// Active health checks and load scrapes: every HealthInterval each backend gets GET /health
// (200 = up) and, when up, GET /metrics for its load and GET /v1/models for the models and
// adapters it serves (models.go). A refused or reset connection or a
// non-200 answer ejects at once; a probe that times out (HealthTimeout) ejects on the second in
// a row, or on the first when corroborated: requests wait on the backend and it sent nothing
// since the probe went out, while a healthy peer did (so the router was not just descheduled). One good probe brings a backend back (a latency outlier only after
// its ejection period). Probe round trips feed the latency outlier check (outlier.go). Probes of
// one backend never overlap.

package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Run probes the backends every HealthInterval (and at once when SetBackends adds some) until
// ctx is done; then it waits for running probes and returns nil.
func (r *Router) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.watch(ctx) })
	t := time.NewTicker(r.opts.HealthInterval)
	defer t.Stop()
	for {
		r.mu.RLock()
		bs := append([]*backend(nil), r.backends...)
		r.mu.RUnlock()
		for _, b := range bs {
			if !b.probing.CompareAndSwap(false, true) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer b.probing.Store(false)
				r.check(ctx, b)
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-r.kick:
		}
	}
}

// check probes one backend and, if it is up, scrapes its load.
func (r *Router) check(ctx context.Context, b *backend) {
	pctx, cancel := context.WithTimeout(ctx, r.opts.HealthTimeout)
	defer cancel()
	sent, t0 := r.now(), time.Now()
	err := r.probeHealth(pctx, b)
	if ctx.Err() != nil {
		return
	}
	if err == nil || errors.Is(err, errTimeout) {
		r.observeRTT(b, time.Since(t0), err == nil)
	}
	if errors.Is(err, errTimeout) {
		oldest, busy := b.calls.oldest()
		corroborated := busy && oldest <= sent && b.lastByte.Load() < sent && r.peerHeard(b, sent)
		r.mu.Lock()
		b.timeouts++
		first := b.timeouts < 2 && b.healthy && !corroborated
		r.mu.Unlock()
		if first {
			return
		}
	}
	r.setHealth(b, err, "probe")
	if err != nil {
		return
	}
	l, err := ScrapeLoad(pctx, r.probe, b.url)
	r.mu.Lock()
	if err == nil {
		b.load = l
	} else {
		b.load = Load{}
	}
	r.mu.Unlock()
	if err != nil {
		r.log.Debug("router: no load metrics", "backend", b.url, "err", err)
	}
	r.refreshModels(pctx, b)
}

// probeHealth GETs b's /health: nil on 200.
func (r *Router) probeHealth(ctx context.Context, b *backend) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := r.probe.Do(req)
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return fmt.Errorf("GET /health: %w (%v)", errTimeout, err)
		}
		return fmt.Errorf("GET /health: %w", err)
	}
	b.lastByte.Store(r.now())
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health: %s", resp.Status)
	}
	return nil
}
