// The ui command: llmcloud ui RUN serves the web console for a training run directory (the
// training view: loss, learning rate, gradient norm, MFU and validation curves, live while the
// run writes). train --ui ADDR serves the same from the training process (train_ui.go). See
// docs/console.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/train"
	"github.com/llmcloud/llmcloud/ui"
)

func init() {
	register("ui", "serve the web console for a training run directory (curves, live while it trains)", runUI)
}

func runUI(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return uiMain(ctx, args, stderr, nil)
}

// uiMain serves the console for a run directory until ctx ends; ready, if set, gets the address.
func uiMain(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := newFlags("ui", stderr)
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 8090, "port to listen on (0 = any free port)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud ui RUN [--host H] [--port P]   (RUN: the run directory, train's --out)")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give one run directory (train's --out), got %d arguments", len(pos))
	}
	if err := train.CheckRunDir(pos[0]); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: runConsole(runSource{dir: pos[0]}), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	fmt.Fprintf(stderr, "llmcloud ui: the console of %s at http://%s\n", pos[0], ln.Addr())
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// runSource is where GET /console/api/run reads: the run directory, and, inside the training
// process, its configuration (known before the first checkpoint) and whether training returned.
type runSource struct {
	dir    string
	config *train.Config
	done   func() bool // nil: train.ReadRun's rule (the final checkpoint)
}

// runConsole serves the console in train mode and GET /console/api/run[?after=K].
func runConsole(src runSource) http.Handler {
	mux := http.NewServeMux()
	ui.Mount(mux, ui.Options{Mode: ui.ModeTrain})
	mux.HandleFunc("GET "+console.RunPath, func(w http.ResponseWriter, r *http.Request) {
		after := 0
		if s := r.URL.Query().Get("after"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				console.WriteError(w, http.StatusBadRequest, "invalid_value", fmt.Sprintf("after %q: want a record count (0 or more)", s))
				return
			}
			after = n
		}
		done := src.done != nil && src.done() // read before the log: a run that is done has written every record
		v, err := train.ReadRun(src.dir)
		if err != nil {
			console.WriteError(w, http.StatusInternalServerError, "run_unreadable", err.Error())
			return
		}
		if src.config != nil {
			v.Config = src.config
		}
		if src.done != nil {
			v.Done = done
		}
		v.Records = v.Records[min(after, len(v.Records)):]
		console.WriteJSON(w, http.StatusOK, v)
	})
	return mux
}
