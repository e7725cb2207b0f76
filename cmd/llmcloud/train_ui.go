// train --ui ADDR: the training process serves the web console for its own run directory
// (ui.go) while it trains, and after a run that finished, until Ctrl-C, so the final curves
// stay in view. Only the process that runs `train` serves it (with --nproc, the launcher; the
// ranks ignore the flag); under an external launcher, run `llmcloud ui RUN` beside it.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/train"
)

// trainUI is the console of a run being trained.
type trainUI struct {
	hs   *http.Server
	addr string
	done atomic.Bool
}

// startTrainUI listens on addr (host:port) and serves the console of cfg's run directory.
func startTrainUI(addr string, cfg train.Config, stderr io.Writer) (*trainUI, error) {
	if cfg.Out == "" {
		return nil, usagef("--ui needs --out (the run directory the console reads)")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--ui: %w", err)
	}
	u := &trainUI{addr: ln.Addr().String()}
	u.hs = &http.Server{Handler: runConsole(runSource{dir: cfg.Out, config: &cfg, done: u.done.Load}),
		ReadHeaderTimeout: 10 * time.Second}
	go u.hs.Serve(ln)
	fmt.Fprintf(stderr, "llmcloud train: the console at http://%s\n", u.addr)
	return u, nil
}

// finish marks the run done. After a run that finished (err nil) it keeps serving until
// SIGINT or SIGTERM; then, or at once after a failed or interrupted run, it stops the server.
func (u *trainUI) finish(err error, stderr io.Writer) {
	u.done.Store(true)
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		fmt.Fprintf(stderr, "llmcloud train: done; the console stays at http://%s until Ctrl-C\n", u.addr)
		<-ctx.Done()
		stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	u.hs.Shutdown(ctx)
}
