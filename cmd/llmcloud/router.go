// The router command: a load balancer in front of OpenAI-compatible replicas (package router).
// Backends come from --backend (static discovery) or from the ready endpoints of Kubernetes
// EndpointSlices (kubernetes discovery). SIGTERM or SIGINT stops accepting, lets running
// requests finish (bounded by --shutdown-timeout) and exits 0.
package main

import (
	"context"
	"errors"
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
	retries                   int
	http                      server.HTTPOptions
}

// routerMain runs the router until ctx ends; ready, if set, gets the listening address.
func routerMain(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := newFlags("router", stderr)
	var f routerFlags
	fs.StringVar(&f.host, "host", "0.0.0.0", "address to listen on")
	fs.IntVar(&f.port, "port", 8080, "port to listen on (0 = any free port)")
	fs.StringVar(&f.policy, "policy", router.RoundRobin, "routing policy: round-robin, least-load, session or prefix")
	fs.Var(&f.backends, "backend", "backend base URL, e.g. http://10.0.0.5:8000 (repeatable or comma-separated; static discovery)")
	fs.StringVar(&f.discovery, "discovery", "static", "where backends come from: static (--backend) or kubernetes (EndpointSlices)")
	fs.StringVar(&f.k8sNamespace, "k8s-namespace", "", "kubernetes discovery: namespace (default: the pod's own)")
	fs.StringVar(&f.k8sSel, "k8s-selector", "", "kubernetes discovery: label selector of the EndpointSlices, e.g. kubernetes.io/service-name=llmcloud")
	fs.IntVar(&f.k8sPort, "k8s-port", 8000, "kubernetes discovery: the replicas' HTTP port")
	fs.DurationVar(&f.health, "health-interval", time.Second, "period of the active GET /health probes")
	fs.DurationVar(&f.timeout, "request-timeout", 600*time.Second, "limit of one upstream request")
	httpFlags(fs, &f.http)
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

	log := slog.New(slog.NewTextHandler(stderr, nil))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rt, err := router.New(router.Options{Policy: f.policy, HealthInterval: f.health, RequestTimeout: f.timeout,
		MaxRetries: retries, Logger: log, Registerer: reg})
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
