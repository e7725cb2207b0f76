// One replica's life, run by its own goroutine: pick a free port, start the process, poll
// /health until 200, join the ready set, and when the process exits leave the set, wait out the
// backoff and start again; when asked to stop, leave the set first, then SIGTERM the process
// group and SIGKILL it after StopTimeout.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
)

type replica struct {
	s    *Supervisor
	num  int
	name string
	stop chan struct{} // closed (under s.mu, with removed set) to drain and quit

	// Guarded by s.mu.
	removed  bool
	state    State
	since    time.Time
	url      string
	pid      int
	starts   int
	lastExit string
	ready    bool // has been ready at least once
}

func newReplica(s *Supervisor, num int) *replica {
	return &replica{s: s, num: num, name: "r" + strconv.Itoa(num), stop: make(chan struct{}),
		state: Starting, since: time.Now()}
}

func (r *replica) statusLocked() ReplicaStatus {
	return ReplicaStatus{Name: r.name, URL: r.url, PID: r.pid, State: r.state,
		Restarts: max(r.starts-1, 0), Since: r.since, LastExit: r.lastExit, EverReady: r.ready}
}

func (r *replica) set(st State, f func()) {
	r.s.mu.Lock()
	r.state, r.since = st, time.Now()
	if f != nil {
		f()
	}
	r.s.mu.Unlock()
}

func (r *replica) run() {
	s := r.s
	defer s.wg.Done()
	defer s.forget(r)
	log := s.opts.Logger.With("replica", r.name)
	failures := 0
	for {
		select {
		case <-r.stop:
			r.set(Stopped, nil)
			return
		default:
		}
		readyAt, exitErr, stopped := r.once(log)
		if stopped {
			return
		}
		if !readyAt.IsZero() && time.Since(readyAt) >= s.opts.StableAfter {
			failures = 0
		}
		delay := min(s.opts.BackoffMin<<min(failures, 20), s.opts.BackoffMax)
		failures++
		log.Warn("replica exited; restarting", "err", exitErr, "backoff", delay)
		s.metrics.restarts.Inc()
		select {
		case <-r.stop:
			r.set(Stopped, nil)
			return
		case <-time.After(delay):
		}
	}
}

// once runs one process to its end. It returns when it was ready (zero if never), why it ended,
// and whether the replica was stopped (then the process is gone and the state is Stopped).
func (r *replica) once(log *slog.Logger) (readyAt time.Time, exitErr error, stopped bool) {
	s := r.s
	// If another process takes the port first, the child exits and restarts on another one.
	port, err := proc.FreePort(s.opts.Host)
	if err != nil {
		r.set(Backoff, func() { r.lastExit = err.Error() })
		return time.Time{}, err, false
	}
	url := "http://" + net.JoinHostPort(s.opts.Host, strconv.Itoa(port))
	argv := append(append([]string{}, s.opts.Argv...), "--host", s.opts.Host, "--port", strconv.Itoa(port))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = s.opts.Env
	cmd.SysProcAttr = proc.SysProcAttr()
	// Two writers: a partial line on one stream is not glued to a line of the other.
	pw, pe := s.out.Prefixed("["+r.name+"] "), s.out.Prefixed("["+r.name+"] ")
	cmd.Stdout, cmd.Stderr = pw, pe
	cmd.WaitDelay = time.Second // a grandchild holding the pipes must not block Wait
	if err := cmd.Start(); err != nil {
		r.set(Backoff, func() { r.lastExit = err.Error(); r.starts++ })
		return time.Time{}, fmt.Errorf("start: %w", err), false
	}
	startTime := time.Now()
	r.set(Starting, func() { r.url, r.pid = url, cmd.Process.Pid; r.starts++ })
	log.Info("replica started", "pid", cmd.Process.Pid, "url", url)
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Flush()
		pe.Flush()
		exited <- err
	}()

	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StartTimeout)
	healthy := r.waitHealthy(ctx, url, exited)
	cancel()
	if healthy {
		readyAt = time.Now()
		r.set(Ready, func() { r.ready = true })
		log.Info("replica ready", "pid", cmd.Process.Pid, "url", url, "start_seconds", time.Since(startTime).Seconds())
		s.changed()
	}
	if !healthy { // exited or stopped while starting, or the start timed out: kill it and try again
		select {
		case err := <-exited:
			return readyAt, r.exited(err, pe), false
		case <-r.stop:
			r.drain(log, cmd, exited)
			return readyAt, nil, true
		default:
		}
		proc.Signal(cmd.Process.Pid, syscall.SIGKILL)
		err := <-exited
		r.exited(err, pe)
		return readyAt, fmt.Errorf("not healthy within %s", s.opts.StartTimeout), false
	}
	select {
	case err := <-exited:
		return readyAt, r.exited(err, pe), false
	case <-r.stop:
		r.drain(log, cmd, exited)
		return readyAt, nil, true
	}
}

// exited records an unexpected exit, with the last line the process wrote to stderr, and takes
// the replica out of the ready set.
func (r *replica) exited(err error, stderr *proc.PrefixWriter) error {
	if err == nil {
		err = errors.New("exit status 0")
	}
	if l := stderr.Last(); l != "" {
		err = fmt.Errorf("%w (last stderr line: %s)", err, l)
	}
	r.set(Backoff, func() { r.lastExit = err.Error() })
	r.s.changed()
	return err
}

// drain takes the replica out of the ready set, then stops its process gracefully.
func (r *replica) drain(log *slog.Logger, cmd *exec.Cmd, exited chan error) {
	r.set(Draining, nil)
	r.s.changed()
	log.Info("replica draining", "pid", cmd.Process.Pid)
	proc.Signal(cmd.Process.Pid, syscall.SIGTERM)
	var err error
	select {
	case err = <-exited:
	case <-time.After(r.s.opts.StopTimeout):
		log.Info("replica did not stop in time; killing", "pid", cmd.Process.Pid)
		proc.Signal(cmd.Process.Pid, syscall.SIGKILL)
		err = <-exited
	}
	// The group may hold other processes (anything the replica started): they go too.
	proc.Signal(cmd.Process.Pid, syscall.SIGKILL)
	msg := "exit status 0"
	if err != nil {
		msg = err.Error()
	}
	r.set(Stopped, func() { r.lastExit = msg })
	log.Info("replica stopped", "pid", cmd.Process.Pid, "exit", msg)
}

// waitHealthy polls url/health until 200 (true), or the process exits, the replica is
// stopped, or ctx ends (false).
func (r *replica) waitHealthy(ctx context.Context, url string, exited chan error) bool {
	t := time.NewTicker(r.s.opts.PollInterval)
	defer t.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/health", nil)
		if resp, err := r.s.opts.Client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case err := <-exited:
			exited <- err // for the caller
			return false
		case <-r.stop:
			return false
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
