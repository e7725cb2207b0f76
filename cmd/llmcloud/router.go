// The router command: a load balancer in front of OpenAI-compatible replicas (package router).
// Backends come from --backend (static discovery) or from the ready endpoints of Kubernetes
// EndpointSlices (kubernetes discovery). SIGTERM or SIGINT stops accepting, lets running
// requests finish (bounded by --shutdown-timeout) and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/router"
	"github.com/llmcloud/llmcloud/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

func init() {
	register("router", "route OpenAI-compatible requests across replicas (round-robin, least-load, session, prefix)", runRouter)
}

func runRouter(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return routerMain(ctx, args, stderr, nil)
}

// routerFlags are the router command's settings.
type routerFlags struct {
	host, policy, discovery   string
	port, k8sPort             int
	backends                  stringList
	k8sNamespace, k8sSel      string
	health, timeout, shutdown time.Duration
	healthTimeout, ttfb, idle time.Duration
	stall, outlierMin, eject  time.Duration
	outlierFactor             float64
	retries                   int
	pdMinPrompt               int
	pdSequential              bool
	http                      server.HTTPOptions
	noUI                      bool
	apiKey                    string
}

// routerMain runs the router until ctx ends; ready, if set, gets the listening address.
func routerMain(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := newFlags("router", stderr)
	var f routerFlags
	fs.StringVar(&f.host, "host", "0.0.0.0", "address to listen on")
	fs.IntVar(&f.port, "port", 8080, "port to listen on (0 = any free port)")
	fs.StringVar(&f.policy, "policy", router.RoundRobin, "routing policy: round-robin, least-load, session, prefix or pd (disaggregated prefill/decode over the replicas' --kv-role; docs/disaggregated.md)")
	fs.BoolVar(&f.pdSequential, "pd-sequential", false, "--policy pd: send the request to the consumer only after the producer has finished the prefill (the transfer then starts after it; for comparison with the default, where both are sent at once and the blocks stream as the prefill computes them)")
	fs.IntVar(&f.pdMinPrompt, "pd-min-prompt-bytes", 0, "--policy pd: prompts (or rendered chat messages) shorter than this go to a consumer alone, which computes them (0: every generation is prefilled on a producer)")
	fs.Var(&f.backends, "backend", "backend base URL, e.g. http://10.0.0.5:8000 (repeatable or comma-separated; static discovery)")
	fs.StringVar(&f.discovery, "discovery", "static", "where backends come from: static (--backend) or kubernetes (EndpointSlices)")
	fs.StringVar(&f.k8sNamespace, "k8s-namespace", "", "kubernetes discovery: namespace (default: the pod's own)")
	fs.StringVar(&f.k8sSel, "k8s-selector", "", "kubernetes discovery: label selector of the EndpointSlices, e.g. kubernetes.io/service-name=llmcloud")
	fs.IntVar(&f.k8sPort, "k8s-port", 8000, "kubernetes discovery: the replicas' HTTP port")
	fs.DurationVar(&f.health, "health-interval", time.Second, "period of the active GET /health probes, /metrics load scrapes and /v1/models polls (model and LoRA adapter affinity)")
	fs.DurationVar(&f.healthTimeout, "health-timeout", 500*time.Millisecond, "limit of one GET /health probe (a timeout ejects on the second in a row, or the first when requests wait and the backend sends nothing)")
	fs.DurationVar(&f.timeout, "request-timeout", 600*time.Second, "limit of one upstream request")
	fs.DurationVar(&f.ttfb, "ttfb-timeout", 120*time.Second, "from sending a request upstream to its first response byte; else the backend is ejected and the request retried elsewhere. For non-streamed requests this bounds the whole generation (llmcloud serve answers at the end)")
	fs.DurationVar(&f.idle, "stream-idle-timeout", 30*time.Second, "largest gap between two pieces of a response once it started; a stream idle longer ends (SSE: with an error event)")
	fs.DurationVar(&f.stall, "stall-timeout", 1500*time.Millisecond, "eject a backend that sent no byte at all (answers, probe answers) this long while a request waited on it; at least health-interval + health-timeout (raised to that when not given)")
	fs.Float64Var(&f.outlierFactor, "outlier-factor", 3, "eject a backend whose probe round trips (EWMA) exceed this many times its healthy peers' median (0 = off)")
	fs.DurationVar(&f.outlierMin, "outlier-min-latency", 250*time.Millisecond, "a latency outlier's probe round trips must also exceed this")
	fs.DurationVar(&f.eject, "ejection-period", 10*time.Second, "a latency outlier stays out of rotation this long")
	httpFlags(fs, &f.http)
	fs.BoolVar(&f.noUI, "no-ui", false, "do not serve the web console at / (then / and /ui/ are proxied like any other path)")
	fs.StringVar(&f.apiKey, "api-key", os.Getenv("LLMCLOUD_API_KEY"), "require this key (Authorization: Bearer KEY) on /v1/* and /console/api/* (default $LLMCLOUD_API_KEY); also sent when reading the backends' /console/api/*, so give them the same key")
	fs.IntVar(&f.retries, "max-retries", 2, "retries on another replica before any response byte reached the client (0 = none)")
	fs.DurationVar(&f.shutdown, "shutdown-timeout", 30*time.Second, "time running requests get to finish after SIGTERM")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected arguments %q", pos)
	}
	var urls []string
	for _, b := range f.backends {
		for _, u := range strings.Split(b, ",") {
			if u = strings.TrimSpace(u); u != "" {
				if _, err := router.NormalizeURL(u); err != nil {
					return usagef("--backend: %v", err)
				}
				urls = append(urls, u)
			}
		}
	}
	switch f.discovery {
	case "static":
		if len(urls) == 0 {
			return usagef("give at least one --backend URL (or --discovery kubernetes)")
		}
	case "kubernetes":
		if len(urls) > 0 {
			return usagef("--backend is for --discovery static")
		}
		if f.k8sSel == "" {
			return usagef("--discovery kubernetes needs --k8s-selector (e.g. kubernetes.io/service-name=llmcloud)")
		}
		if f.k8sPort <= 0 || f.k8sPort > 65535 {
			return usagef("--k8s-port %d out of range", f.k8sPort)
		}
	default:
		return usagef("--discovery %q: want static or kubernetes", f.discovery)
	}
	retries, err := routerRetries(f.retries)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	opts, err := routerTimeouts(f, set["stall-timeout"])
	if err != nil {
		return err
	}

	log := slog.New(slog.NewTextHandler(stderr, nil))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts.Policy, opts.MaxRetries, opts.Logger, opts.Registerer = f.policy, retries, log, reg
	opts.PDMinPromptBytes = f.pdMinPrompt
	opts.PDSequential = f.pdSequential
	opts.UI, opts.APIKey, opts.BackendKey = !f.noUI, f.apiKey, f.apiKey
	rt, err := router.New(opts)
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	if f.discovery == "static" {
		rt.SetBackends(urls)
	} else {
		go func() { done <- watchKubernetes(rctx, f, rt, log) }()
	}
	go func() { done <- rt.Run(rctx) }()

	hs := server.NewHTTPServer(rt.Handler(), f.http)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(server.LimitListener(ln, f.http)) }()
	addr := ln.Addr().String()
	log.Info("router listening", "addr", addr, "policy", rt.Policy(), "discovery", f.discovery, "backends", len(urls))
	if !f.noUI {
		log.Info("web console", "url", consoleURL(addr))
	}
	if ready != nil {
		ready(addr)
	}
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return err
	case runErr = <-done:
		if runErr == nil {
			runErr = errors.New("discovery stopped")
		}
	}
	log.Info("router shutting down", "timeout", f.shutdown)
	sctx, scancel := context.WithTimeout(context.Background(), f.shutdown)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	cancel()
	return runErr
}

// routerTimeouts checks the timeout and outlier flags and maps them onto router.Options. A
// --stall-timeout not given is raised to health-interval + health-timeout when that is more.
func routerTimeouts(f routerFlags, stallGiven bool) (router.Options, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"health-interval", f.health}, {"health-timeout", f.healthTimeout}, {"request-timeout", f.timeout},
		{"ttfb-timeout", f.ttfb}, {"stream-idle-timeout", f.idle}, {"stall-timeout", f.stall},
		{"outlier-min-latency", f.outlierMin}, {"ejection-period", f.eject}} {
		if d.v <= 0 {
			return router.Options{}, usagef("--%s %v must be positive", d.name, d.v)
		}
	}
	stall, floor := f.stall, f.health+f.healthTimeout
	switch {
	case stall < floor && stallGiven:
		return router.Options{}, usagef("--stall-timeout %v must be at least --health-interval + --health-timeout (%v): a busy backend answering probes would be ejected", stall, floor)
	case stall < floor:
		stall = floor
	}
	factor := f.outlierFactor
	switch {
	case factor == 0:
		factor = -1
	case factor < 1:
		return router.Options{}, usagef("--outlier-factor %v: want 0 (off) or at least 1", factor)
	}
	return router.Options{HealthInterval: f.health, HealthTimeout: f.healthTimeout, RequestTimeout: f.timeout,
		TTFBTimeout: f.ttfb, StreamIdle: f.idle, StallTimeout: stall, OutlierFactor: factor,
		OutlierFloor: f.outlierMin, EjectionPeriod: f.eject}, nil
}

// routerRetries maps the --max-retries flag (0 = none) onto router.Options.MaxRetries, where 0
// means the default and -1 means none.
func routerRetries(flagValue int) (int, error) {
	switch {
	case flagValue < 0:
		return 0, usagef("--max-retries %d is negative", flagValue)
	case flagValue == 0:
		return -1, nil
	}
	return flagValue, nil
}
