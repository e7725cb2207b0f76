// Package launch starts the ranks of a distributed job on this machine, as torchrun does: N
// children of one program with torchrun's environment (MASTER_ADDR=127.0.0.1, a free
// MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE), their output merged line by line
// with the rank in front, signals forwarded, and a failed rank reported by number and cause
// while the others get a grace period to notice and exit by themselves before they are killed.
// It imports no compute code (see docs/distributed-training.md).
package launch

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
)

// Options describe one local job.
type Options struct {
	Exe  string   // the program every rank runs (usually os.Executable())
	Args []string // its arguments, the same for every rank
	// NProc is the number of ranks (the world size).
	NProc int
	// Env is added to the launcher's environment for every rank (after it, so it wins).
	Env []string
	// Stdout and Stderr receive the ranks' output, whole lines at a time: rank 0's as it is,
	// every other rank's with "[rank r] " in front (both of its streams on Stderr).
	Stdout, Stderr io.Writer
	// Grace is how long the other ranks may take to exit by themselves once one has failed
	// (they should: their collectives fail naming the dead rank); then they are killed.
	Grace time.Duration
	// Signals are forwarded to every rank (SIGINT and SIGTERM: the ranks save and exit); the
	// second one kills every rank at once. nil: none are forwarded.
	Signals <-chan os.Signal
	// OnStart, if set, is called with each rank's process id once it has started.
	OnStart func(rank, pid int)
	// Log receives the launcher's own events (ranks started, exited, killed). nil: discarded.
	Log *slog.Logger
}

// Exit is how one rank ended.
type Exit struct {
	Rank int
	Err  error // nil: exit status 0
	// Killed is set when the launcher killed the rank (after the grace, or on a second signal).
	Killed bool
	// After is when the rank ended, counted from the first failure (0 for the first failure
	// itself, and for ranks that ended before any failure).
	After time.Duration
	// LastLine is the last non-empty line the rank wrote to stderr (its error, usually).
	LastLine string
}

// JobError is returned when any rank failed: the failure that most likely caused the others,
// and how every rank ended.
type JobError struct {
	// First is the first rank that was ended by a signal the launcher did not send (killed,
	// crashed, out of memory) if any, else the first rank that failed: when one rank dies the
	// others exit with errors naming it within moments, and may be seen to end first.
	First Exit
	Exits []Exit // by rank
	// Signal is the signal forwarded to the ranks before they failed (nil: none), so the
	// failures are most likely the ranks stopping on it.
	Signal os.Signal
}

func (e *JobError) Error() string {
	var b strings.Builder
	if e.Signal != nil {
		fmt.Fprintf(&b, "stopped by %v: ", e.Signal)
	}
	fmt.Fprintf(&b, "rank %d failed (%v)", e.First.Rank, e.First.Err)
	if e.First.LastLine != "" {
		fmt.Fprintf(&b, ": %s", e.First.LastLine)
	}
	var killed []string
	for _, x := range e.Exits {
		if x.Killed {
			killed = append(killed, strconv.Itoa(x.Rank))
		}
	}
	if len(killed) > 0 {
		fmt.Fprintf(&b, "; killed rank(s) %s that had not exited", strings.Join(killed, ", "))
	}
	return b.String()
}

// rankEnv is torchrun's environment for one rank of n on this host.
func rankEnv(rank, n, port int) []string {
	return []string{"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + strconv.Itoa(port),
		"WORLD_SIZE=" + strconv.Itoa(n), "RANK=" + strconv.Itoa(rank),
		"LOCAL_RANK=" + strconv.Itoa(rank), "LOCAL_WORLD_SIZE=" + strconv.Itoa(n)}
}

// rank is one running child.
type rank struct {
	num            int
	cmd            *exec.Cmd
	stdout, stderr *proc.PrefixWriter
}

// Run starts o.NProc ranks and waits until every one has ended. It returns nil when all exit
// with status 0, else a *JobError. Ranks already started are killed when a later one cannot
// be started.
func Run(o Options) error {
	if o.NProc < 1 {
		return fmt.Errorf("launch: need at least one rank, got %d", o.NProc)
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	port, err := proc.FreePort("127.0.0.1")
	if err != nil {
		return err
	}
	outLines, errLines := proc.NewLines(o.Stdout), proc.NewLines(o.Stderr)
	ranks := make([]*rank, o.NProc)
	for r := range o.NProc {
		cmd := exec.Command(o.Exe, o.Args...)
		cmd.Env = append(append(os.Environ(), o.Env...), rankEnv(r, o.NProc, port)...)
		cmd.SysProcAttr = proc.SysProcAttr()
		cmd.WaitDelay = time.Second // a grandchild holding the pipes must not block Wait
		rk := &rank{num: r, cmd: cmd}
		if r == 0 {
			rk.stdout, rk.stderr = outLines.Prefixed(""), errLines.Prefixed("")
		} else {
			p := fmt.Sprintf("[rank %d] ", r)
			rk.stdout, rk.stderr = errLines.Prefixed(p), errLines.Prefixed(p)
		}
		cmd.Stdout, cmd.Stderr = rk.stdout, rk.stderr
		if err := cmd.Start(); err != nil {
			for _, s := range ranks[:r] {
				proc.Signal(s.cmd.Process.Pid, syscall.SIGKILL)
				s.cmd.Wait()
			}
			return fmt.Errorf("launch: starting rank %d: %w", r, err)
		}
		ranks[r] = rk
		log.Info("rank started", "rank", r, "pid", cmd.Process.Pid, "master_port", port, "world_size", o.NProc)
		if o.OnStart != nil {
			o.OnStart(r, cmd.Process.Pid)
		}
	}
	return supervise(ranks, o, log)
}

// supervise waits for the ranks, forwarding signals and enforcing the grace after a failure.
func supervise(ranks []*rank, o Options, log *slog.Logger) error {
	done := make(chan Exit, len(ranks))
	for _, rk := range ranks {
		go func() {
			err := rk.cmd.Wait()
			rk.stdout.Flush()
			rk.stderr.Flush()
			done <- Exit{Rank: rk.num, Err: err, LastLine: rk.stderr.Last()}
		}()
	}
	exits := make([]Exit, len(ranks))
	alive := make([]bool, len(ranks))
	for i := range alive {
		alive[i] = true
	}
	killAll := func(why string) {
		for _, rk := range ranks {
			if alive[rk.num] {
				log.Warn("killing rank", "rank", rk.num, "pid", rk.cmd.Process.Pid, "why", why)
				exits[rk.num].Killed = true
				proc.Signal(rk.cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	}
	var (
		first    *Exit
		failedAt time.Time
		deadline <-chan time.Time
		signals  = o.Signals
		signaled int
		firstSig os.Signal
		byEnd    []Exit // in the order the ranks ended
	)
	for left := len(ranks); left > 0; {
		select {
		case x := <-done:
			left--
			alive[x.Rank] = false
			x.Killed = exits[x.Rank].Killed
			if first != nil {
				x.After = time.Since(failedAt)
			}
			exits[x.Rank] = x
			byEnd = append(byEnd, x)
			if x.Err == nil {
				log.Info("rank exited", "rank", x.Rank, "status", 0)
				continue
			}
			log.Warn("rank failed", "rank", x.Rank, "pid", ranks[x.Rank].cmd.Process.Pid, "err", x.Err.Error(),
				"after_first_failure", x.After, "last_line", x.LastLine)
			if first == nil {
				first, failedAt = &exits[x.Rank], time.Now()
				deadline = time.After(o.Grace)
				log.Warn("waiting for the other ranks to exit", "grace", o.Grace)
			}
		case <-deadline:
			deadline = nil
			killAll(fmt.Sprintf("still running %v after rank %d failed", o.Grace, first.Rank))
		case sig := <-signals:
			signaled++
			if signaled > 1 {
				killAll("second signal")
				signals = nil
				continue
			}
			log.Info("forwarding signal to every rank", "signal", sig.String())
			if first == nil {
				firstSig = sig
			}
			for _, rk := range ranks {
				if alive[rk.num] {
					if s, ok := sig.(syscall.Signal); ok {
						proc.Signal(rk.cmd.Process.Pid, s)
					}
				}
			}
		}
	}
	for _, rk := range ranks { // anything a rank left behind in its group goes too
		proc.Signal(rk.cmd.Process.Pid, syscall.SIGKILL)
	}
	if first == nil {
		return nil
	}
	je := &JobError{First: *first, Exits: exits, Signal: firstSig}
	for _, x := range byEnd {
		if bySignal(x) && !x.Killed {
			je.First = x
			break
		}
	}
	return je
}

// bySignal reports whether a rank was ended by a signal.
func bySignal(x Exit) bool {
	var ee *exec.ExitError
	if !errors.As(x.Err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
