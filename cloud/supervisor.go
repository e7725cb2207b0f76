// Package cloud supervises a fleet of local `llmcloud serve` processes: it starts N replicas on
// free ports, waits for each one's /health, restarts one that exits (with exponential backoff,
// on a fresh port), adds and removes replicas on demand (a removed replica leaves the ready set
// first, then gets SIGTERM and drains), and stops them all on Stop. Whenever the set of ready
// replicas changes it calls Options.OnChange with their URLs, which `llmcloud up` wires to the
// router's SetBackends.
//
// Each replica runs in its own process group with a parent-death signal (Linux), so neither a
// Ctrl-C in the terminal nor the supervisor dying leaves an orphan. The Supervisor implements
// autoscale.Scaler (Replicas, Scale).
package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Supervisor. Argv is required; the rest have defaults (see New).
type Options struct {
	// Argv is the serve command without --host and --port, which the supervisor appends:
	// e.g. [/path/to/llmcloud serve --model M --max-num-seqs 8].
	Argv []string
	Env  []string // the children's environment (nil: the supervisor's own)
	Host string   // where children listen (default 127.0.0.1)

	Replicas     int           // started by Start (default 1)
	StartTimeout time.Duration // process start to /health 200 (default 2 min); then it is killed and restarted
	StopTimeout  time.Duration // SIGTERM to SIGKILL when draining (default 30 s)
	BackoffMin   time.Duration // first restart delay (default 500 ms), doubled per consecutive failure
	BackoffMax   time.Duration // (default 10 s)
	StableAfter  time.Duration // ready this long resets the backoff (default 30 s)
	PollInterval time.Duration // /health polling while starting (default 100 ms)

	// Output receives the children's stdout and stderr, each line prefixed with "[rN] ".
	Output io.Writer
	// OnChange gets the URLs of the ready replicas (ordered by replica number) whenever that set
	// changes. Calls are serialized and never made with the supervisor's lock held.
	OnChange func(urls []string)

	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Client     *http.Client // for /health (default: 2 s timeout)
}

func (o *Options) defaults() error {
	if len(o.Argv) == 0 {
		return errors.New("cloud: Options.Argv (the serve command) is required")
	}
	if o.Replicas < 0 {
		return fmt.Errorf("cloud: replicas %d < 0", o.Replicas)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.StartTimeout, 2*time.Minute)
	def(&o.StopTimeout, 30*time.Second)
	def(&o.BackoffMin, 500*time.Millisecond)
	def(&o.BackoffMax, 10*time.Second)
	def(&o.StableAfter, 30*time.Second)
	def(&o.PollInterval, 100*time.Millisecond)
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Output == nil {
		o.Output = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 2 * time.Second}
	}
	return nil
}

// State is where a replica is in its life.
type State string

const (
	Starting State = "starting" // process started, /health not yet 200
	Ready    State = "ready"    // in the ready set
	Backoff  State = "backoff"  // exited or failed to start; waiting to restart
	Draining State = "draining" // removed: out of the ready set, SIGTERM sent
	Stopped  State = "stopped"
)

// ReplicaStatus is a snapshot of one replica.
type ReplicaStatus struct {
	Name      string // r1, r2, ... (numbers are never reused)
	URL       string // http://host:port of the current process ("" before the first start)
	PID       int
	State     State
	Restarts  int       // processes started after the first
	Since     time.Time // when State was entered
	LastExit  string    // how the previous process ended, with its last stderr line
	EverReady bool      // it has been ready at least once
}

// Supervisor runs the fleet. Its methods are safe for concurrent use.
type Supervisor struct {
	opts     Options
	metrics  *metrics
	mu       sync.Mutex
	replicas []*replica // by number; stopped ones are dropped
	nextNum  int
	closed   bool
	wg       sync.WaitGroup
	changeMu sync.Mutex // serializes OnChange
	lastSent []string
	out      *proc.Lines
}

// New checks the options; nothing starts before Start.
func New(opts Options) (*Supervisor, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Supervisor{opts: opts, metrics: m, out: proc.NewLines(opts.Output)}, nil
}

// Start launches Options.Replicas replicas and returns at once (see WaitReady).
func (s *Supervisor) Start() error { return s.Scale(context.Background(), s.opts.Replicas) }

// Replicas returns the number of replicas the fleet is set to (starting, ready or restarting;
// draining ones are not counted).
func (s *Supervisor) Replicas(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activeLocked(), nil
}

func (s *Supervisor) activeLocked() int {
	n := 0
	for _, r := range s.replicas {
		if !r.removed {
			n++
		}
	}
	return n
}

// Scale sets the fleet to n replicas. New replicas start at once; removed ones (those not ready
// first, then the newest) leave the ready set, then drain in the background.
func (s *Supervisor) Scale(_ context.Context, n int) error {
	if n < 0 {
		return fmt.Errorf("cloud: cannot scale to %d replicas", n)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("cloud: supervisor stopped")
	}
	active := s.activeLocked()
	for ; active < n; active++ {
		s.nextNum++
		r := newReplica(s, s.nextNum)
		s.replicas = append(s.replicas, r)
		s.wg.Add(1)
		go r.run()
	}
	if active > n {
		var cands []*replica
		for _, r := range s.replicas {
			if !r.removed {
				cands = append(cands, r)
			}
		}
		// Not-ready replicas go first, then the newest.
		slices.SortStableFunc(cands, func(a, b *replica) int {
			if (a.state == Ready) != (b.state == Ready) {
				if a.state == Ready {
					return 1
				}
				return -1
			}
			return b.num - a.num
		})
		for _, r := range cands[:active-n] {
			r.removed = true
			close(r.stop)
		}
	}
	s.metrics.target.Set(float64(n))
	s.mu.Unlock()
	s.opts.Logger.Info("fleet scaled", "replicas", n)
	return nil
}

// Status returns a snapshot of every replica, ordered by number.
func (s *Supervisor) Status() []ReplicaStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ReplicaStatus, 0, len(s.replicas))
	for _, r := range s.replicas {
		out = append(out, r.statusLocked())
	}
	return out
}

// ReadyURLs returns the URLs of the ready replicas, ordered by number.
func (s *Supervisor) ReadyURLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var urls []string
	for _, r := range s.replicas {
		if r.state == Ready {
			urls = append(urls, r.url)
		}
	}
	return urls
}

// WaitReady waits until at least n replicas are ready or ctx ends.
func (s *Supervisor) WaitReady(ctx context.Context, n int) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for len(s.ReadyURLs()) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cloud: %d of %d replicas ready: %w", len(s.ReadyURLs()), n, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Stop drains every replica (out of the ready set, SIGTERM, SIGKILL after StopTimeout) and
// returns when all processes have exited. The supervisor cannot be started again.
func (s *Supervisor) Stop() {
	s.mu.Lock()
	s.closed = true
	for _, r := range s.replicas {
		if !r.removed {
			r.removed = true
			close(r.stop)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.metrics.target.Set(0)
}

// changed recomputes the ready set and calls OnChange if it differs from the last one sent.
func (s *Supervisor) changed() {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	urls := s.ReadyURLs()
	s.metrics.ready.Set(float64(len(urls)))
	if slices.Equal(urls, s.lastSent) && s.lastSent != nil {
		return
	}
	s.lastSent = append([]string{}, urls...)
	s.opts.Logger.Info("ready replicas", "urls", urls)
	if s.opts.OnChange != nil {
		s.opts.OnChange(urls)
	}
}

// forget drops a stopped replica from the list.
func (s *Supervisor) forget(r *replica) {
	s.mu.Lock()
	s.replicas = slices.DeleteFunc(s.replicas, func(x *replica) bool { return x == r })
	s.mu.Unlock()
}

type metrics struct {
	target   prometheus.Gauge
	ready    prometheus.Gauge
	restarts prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		target:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmcloud_cloud_replicas", Help: "Replicas the fleet is set to."}),
		ready:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmcloud_cloud_ready_replicas", Help: "Replicas answering /health and in the router's set."}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "llmcloud_cloud_replica_restarts_total", Help: "Replica processes started again after an exit or a failed start."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.target, m.ready, m.restarts} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("cloud: register metrics: %w", err)
			}
		}
	}
	return m, nil
}
