// Run: one benchmark. Requests leave on the arrival schedule (Gaps), each in its own goroutine,
// behind an optional semaphore; Ctrl-C (ctx) stops sending, cancels what is in flight, and the
// run still produces a result.

package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Config is one run's workload and load shape.
type Config struct {
	Client         *Client
	Requests       []Request
	RequestRate    Rate    // requests/s; +Inf: all at once
	Burstiness     float64 // 1: Poisson
	MaxConcurrency int     // 0: no cap
	Seed           uint64
	NumWarmups     int // unmeasured requests first (from the start of Requests)
	Goodput        Goodput
	Percentiles    []float64 // metric percentiles, e.g. [99]
	Progress       func()    // after each measured request finishes, concurrently from the request goroutines (may be nil)
}

// Run sends cfg.Requests and fills the measurements of res. It returns the outputs of the
// requests that were sent (all of them unless ctx was cancelled; then res.Interrupted is set).
func Run(ctx context.Context, cfg Config, res *Result) []Output {
	if cfg.Burstiness <= 0 {
		cfg.Burstiness = 1
	}
	if len(cfg.Percentiles) == 0 {
		cfg.Percentiles = []float64{99}
	}
	var sem chan struct{}
	if cfg.MaxConcurrency > 0 {
		sem = make(chan struct{}, cfg.MaxConcurrency)
	}
	if cfg.NumWarmups > 0 && len(cfg.Requests) > 0 {
		warm := make([]Request, cfg.NumWarmups)
		for i := range warm {
			warm[i] = cfg.Requests[i%len(cfg.Requests)]
		}
		send(ctx, cfg.Client, warm, make([]time.Duration, len(warm)), sem, nil, -len(warm))
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6172726976616c))
	gaps := Gaps(len(cfg.Requests), float64(cfg.RequestRate), cfg.Burstiness, rng)
	start := time.Now()
	outs, sent := send(ctx, cfg.Client, cfg.Requests, gaps, sem, cfg.Progress, 0)
	duration := time.Since(start)
	res.Interrupted = ctx.Err() != nil
	kept := outs[:0]
	for i, o := range outs {
		if sent[i] {
			kept = append(kept, o)
		}
	}
	Compute(res, kept, start, duration, cfg.Goodput, cfg.Percentiles)
	return kept
}

// send issues reqs, request i (after the first) gaps[i-1] after the one before, and waits for
// all of them. sent[i] reports whether request i went out (false once ctx is cancelled before
// its time or its semaphore slot). ids number requests from firstID.
func send(ctx context.Context, c *Client, reqs []Request, gaps []time.Duration, sem chan struct{}, progress func(), firstID int) ([]Output, []bool) {
	outs := make([]Output, len(reqs))
	sent := make([]bool, len(reqs))
	var wg sync.WaitGroup
	timer := newArrivalTimer(ctx)
	defer timer.close()
	target := time.Now()
	for i, r := range reqs {
		if i > 0 {
			target = target.Add(gaps[i-1])
		}
		timer.sleep(ctx, time.Until(target))
		if ctx.Err() != nil {
			break
		}
		due := target
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem != nil {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done():
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
			o := c.Do(ctx, r, firstID+i)
			o.Scheduled = due
			outs[i], sent[i] = o, true
			if progress != nil {
				progress()
			}
		}()
	}
	wg.Wait()
	return outs, sent
}
