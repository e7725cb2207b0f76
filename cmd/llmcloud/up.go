// The up command: a whole local cloud in one process tree. It starts N `llmcloud serve`
// replicas under a supervisor (package cloud), puts the router (package router) in front of
// them in-process, optionally runs the autoscaler (package autoscale) over the supervisor, and
// shows the fleet's status every second. Ctrl-C drains and stops everything. See docs/cloud.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmcloud/llmcloud/autoscale"
	"github.com/llmcloud/llmcloud/cloud"
	"github.com/llmcloud/llmcloud/router"
)

func init() {
	register("up", "run a local cloud: supervised serve replicas behind the router, with an optional autoscaler", runUp)
}

func runUp(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The first Ctrl-C drains; a second one kills (the replicas die with us: parent-death signal).
	go func() { <-ctx.Done(); stop() }()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return up(ctx, args, stdout, stderr, upHooks{serveArgv: []string{exe, "serve"}})
}

// upHooks let tests run the command in-process.
type upHooks struct {
	serveArgv []string          // the serve command (before the model and passed-through flags)
	ready     func(addr string) // gets the router's address once it listens
}

// upFlags are the command's settings.
type upFlags struct {
	replicas            int
	model, host, policy string
	port                int
	as                  autoscaleFlags
	statusInterval      time.Duration
	logFile             string
	startTimeout, drain time.Duration
	health              time.Duration
	retries             int
	noUI                bool
	apiKey              string
}

func up(ctx context.Context, args []string, stdout, stderr io.Writer, hooks upHooks) error {
	fs := newFlags("up", stderr)
	var f upFlags
	fs.IntVar(&f.replicas, "replicas", 2, "replicas to start (with --autoscale: clamped to its bounds)")
	fs.StringVar(&f.model, "model", "", "model path (GGUF, Hugging Face directory, llama2.c .bin); empty: serve's default")
	fs.StringVar(&f.host, "host", "0.0.0.0", "router address to listen on")
	fs.IntVar(&f.port, "port", 8080, "router port (0 = any free port)")
	fs.StringVar(&f.policy, "policy", "prefix", "routing policy: round-robin, least-load, session or prefix")
	f.as.register(fs)
	fs.DurationVar(&f.statusInterval, "status-interval", time.Second, "status refresh period (0 = no status)")
	fs.StringVar(&f.logFile, "log-file", "", "log and replica output file (default: stderr, or a temp file when stdout is a terminal)")
	fs.DurationVar(&f.startTimeout, "start-timeout", 2*time.Minute, "a replica's start to /health 200")
	fs.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "a removed replica's SIGTERM to SIGKILL")
	fs.DurationVar(&f.health, "health-interval", time.Second, "router's /health and /metrics probe period")
	fs.IntVar(&f.retries, "max-retries", 2, "router retries on another replica before any response byte reached the client (0 = none)")
	fs.BoolVar(&f.noUI, "no-ui", false, "do not serve the web console at /")
	fs.StringVar(&f.apiKey, "api-key", os.Getenv("LLMCLOUD_API_KEY"), "require this key (Authorization: Bearer KEY) on /v1/* and /console/api/*, at the router and every replica (default $LLMCLOUD_API_KEY)")
	var passThrough []string // serve flags, after "--"
	if i := slices.Index(args, "--"); i >= 0 {
		args, passThrough = args[:i], args[i+1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q (serve flags go after --)", fs.Args())
	}
	if f.replicas < 0 {
		return usagef("--replicas %d < 0", f.replicas)
	}
	for _, a := range passThrough {
		switch name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-"); name {
		case "host", "port", "api-key":
			return usagef("serve flag --%s is set by up", name)
		}
	}
	var asCfg *autoscale.Config
	if f.as.bounds != "" {
		c, err := f.as.config()
		if err != nil {
			return usagef("%v", err)
		}
		asCfg = &c
		f.replicas = min(max(f.replicas, c.MinReplicas), c.MaxReplicas)
	}

	logOut, logPath, closeLog, err := upLogOutput(f.logFile, stdout, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	log := slog.New(slog.NewTextHandler(logOut, nil))
	reg := prometheus.NewRegistry()
	retries, err := routerRetries(f.retries)
	if err != nil {
		return err
	}
	rt, err := router.New(router.Options{Policy: f.policy, HealthInterval: f.health, MaxRetries: retries,
		Logger: log.With("component", "router"), Registerer: reg, APIKey: f.apiKey, BackendKey: f.apiKey})
	if err != nil {
		return usagef("%v", err)
	}
	argv := append([]string{}, hooks.serveArgv...)
	if f.model != "" {
		argv = append(argv, "--model", f.model)
	}
	argv = append(argv, passThrough...)
	var env []string // nil: the replicas inherit ours
	if f.apiKey != "" {
		env = append(os.Environ(), "LLMCLOUD_API_KEY="+f.apiKey) // not in argv, where ps shows it
	}
	sup, err := cloud.New(cloud.Options{Argv: argv, Env: env, Replicas: f.replicas, StartTimeout: f.startTimeout,
		StopTimeout: f.drain, Output: logOut, OnChange: rt.SetBackends,
		Logger: log.With("component", "cloud"), Registerer: reg})
	if err != nil {
		return err
	}

	var ctl *autoscale.Controller
	if asCfg != nil {
		ctl, err = autoscale.NewController(autoscale.ControllerOptions{Config: *asCfg, Scaler: sup,
			Observe: observeRouter(rt), Interval: f.as.interval, Logger: log.With("component", "autoscale"),
			Registerer: reg}, time.Now())
		if err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", rt.Handler())
	mux.HandleFunc("GET /cloud/status", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(cloudStatus(req.Context(), sup, rt, ctl))
	})
	mountConsole(mux, !f.noUI, f.health, sup, rt, ctl)
	hs := &http.Server{Handler: router.RequireKey(f.apiKey, mux), ReadHeaderTimeout: 30 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("router listening", "addr", addr, "policy", f.policy, "replicas", f.replicas, "serve", argv)
	if !f.noUI {
		log.Info("web console", "url", consoleURL(addr))
	}
	if logPath != "" {
		fmt.Fprintf(stderr, "llmcloud up: router on %s; logs in %s\n", addr, logPath)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { rt.Run(runCtx) })
	if err := sup.Start(); err != nil {
		cancel()
		hs.Close()
		wg.Wait()
		return err
	}
	if ctl != nil {
		wg.Go(func() { ctl.Run(runCtx) })
	}
	if hooks.ready != nil {
		hooks.ready(addr)
	}
	if f.statusInterval > 0 {
		wg.Go(func() { showStatus(runCtx, stdout, isTerminal(stdout), f.statusInterval, sup, rt, ctl, log) })
	}

	startErr := make(chan error, 1)
	wg.Go(func() {
		if err := watchStart(runCtx, sup); err != nil {
			startErr <- err
		}
	})
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-serveErr:
	case runErr = <-startErr:
	}
	log.Info("shutting down: draining replicas")
	cancel() // autoscaler and status stop first, so nothing scales during the drain
	wg.Wait()
	shutdownDone := make(chan struct{})
	go func() {
		sctx, c := context.WithTimeout(context.Background(), f.drain+5*time.Second)
		defer c()
		hs.Shutdown(sctx)
		close(shutdownDone)
	}()
	sup.Stop()
	<-shutdownDone
	log.Info("stopped")
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

// observeRouter reads the replicas' load from the router's latest scrapes (healthy ones only).
func observeRouter(rt *router.Router) autoscale.ObserveFunc {
	return func(context.Context) ([]autoscale.Sample, error) {
		var s []autoscale.Sample
		for _, b := range rt.Backends() {
			if b.Healthy {
				s = append(s, autoscale.Sample{Replica: b.URL, Waiting: b.Waiting, Running: b.Running, KVUsage: b.KVUsage})
			}
		}
		return s, nil
	}
}

// upLogOutput opens where logs and replica output go, and returns its path if it is a file.
func upLogOutput(path string, stdout, stderr io.Writer) (io.Writer, string, func(), error) {
	if path == "" && isTerminal(stdout) {
		path = filepath.Join(os.TempDir(), fmt.Sprintf("llmcloud-up-%d.log", os.Getpid()))
	}
	if path == "" {
		return stderr, "", func() {}, nil
	}
	fl, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--log-file: %w", err)
	}
	return fl, path, func() { fl.Close() }, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	fl, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := fl.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// watchStart returns an error when no replica can start (every one has failed three starts and
// none was ever ready: a bad model path or serve flag), and nil once one is ready or ctx ends.
func watchStart(ctx context.Context, sup *cloud.Supervisor) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		st := sup.Status()
		failing := 0
		for _, r := range st {
			if r.EverReady {
				return nil
			}
			if r.Restarts >= 2 {
				failing++
			}
		}
		if len(st) > 0 && failing == len(st) {
			return fmt.Errorf("no replica starts (%d tries each); %s: %s", st[0].Restarts+1, st[0].Name, st[0].LastExit)
		}
	}
}
