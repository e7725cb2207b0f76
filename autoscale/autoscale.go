// Package autoscale decides how many serving replicas a fleet should run. The core, Autoscaler,
// is a pure state machine in the style of etcd's raft: the caller passes the time and the
// replicas' observed load to Evaluate and gets one Decision back; it does no I/O, reads no
// clock and starts no goroutine, so its tests never sleep. Controller (controller.go) is the
// driver that observes, evaluates, logs and acts through a Scaler.
//
// The rule is the Kubernetes HPA's: with a target value T of a per-replica metric (requests
// waiting, requests running, or KV-cache usage), the desired count is ceil(sum of the metric
// over the replicas / T), clamped to [MinReplicas, MaxReplicas]. Two time rules keep it from
// flapping:
//
//   - scale-up cool-down: after any change, no scale-up for ScaleUpCooldown (the replicas just
//     added need time to load and take load before the metric means anything); the first
//     scale-up after the start is immediate;
//   - scale-down stabilization: a scale-down goes to the highest desired count seen over the
//     last ScaleDownCooldown, and never sooner than ScaleDownCooldown after the previous change
//     (or the start), so a fleet shrinks only after staying idle for the whole window.
package autoscale

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Metric names the per-replica value the autoscaler targets.
type Metric string

const (
	// MetricWaiting is vllm:num_requests_waiting (requests queued, not yet scheduled).
	MetricWaiting Metric = "waiting"
	// MetricRunning is vllm:num_requests_running (requests in the running batch).
	MetricRunning Metric = "running"
	// MetricKVUsage is vllm:kv_cache_usage_perc (fraction 0..1 of KV blocks in use).
	MetricKVUsage Metric = "kv-usage"
)

// Config is the autoscaler's policy. DefaultConfig returns a complete one.
type Config struct {
	Metric      Metric
	Target      float64 // per-replica target value of Metric (> 0)
	MinReplicas int     // >= 0
	MaxReplicas int     // >= MinReplicas, >= 1
	// ScaleUpCooldown: no scale-up sooner than this after the previous change.
	ScaleUpCooldown time.Duration
	// ScaleDownCooldown: the scale-down stabilization window (see the package comment).
	ScaleDownCooldown time.Duration
}

// DefaultConfig targets 2 waiting requests per replica on 1..4 replicas, 10 s up, 60 s down.
func DefaultConfig() Config {
	return Config{Metric: MetricWaiting, Target: 2, MinReplicas: 1, MaxReplicas: 4,
		ScaleUpCooldown: 10 * time.Second, ScaleDownCooldown: 60 * time.Second}
}

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	switch c.Metric {
	case MetricWaiting, MetricRunning, MetricKVUsage:
	default:
		return fmt.Errorf("autoscale: unknown metric %q (want waiting, running or kv-usage)", c.Metric)
	}
	switch {
	case !(c.Target > 0) || math.IsInf(c.Target, 0):
		return fmt.Errorf("autoscale: target must be a positive number, got %v", c.Target)
	case c.MinReplicas < 0:
		return fmt.Errorf("autoscale: min replicas %d < 0", c.MinReplicas)
	case c.MaxReplicas < 1 || c.MaxReplicas < c.MinReplicas:
		return fmt.Errorf("autoscale: max replicas %d must be >= 1 and >= min replicas %d", c.MaxReplicas, c.MinReplicas)
	case c.ScaleUpCooldown < 0 || c.ScaleDownCooldown < 0:
		return errors.New("autoscale: cool-downs must not be negative")
	}
	return nil
}

// Sample is one replica's observed load at one evaluation.
type Sample struct {
	Replica string  // a name for the logs (its URL)
	Waiting float64 // vllm:num_requests_waiting
	Running float64 // vllm:num_requests_running
	KVUsage float64 // vllm:kv_cache_usage_perc, 0..1
}

// Value returns the sample's value of metric m.
func (s Sample) Value(m Metric) float64 {
	switch m {
	case MetricRunning:
		return s.Running
	case MetricKVUsage:
		return s.KVUsage
	}
	return s.Waiting
}

// Action is what a Decision does.
type Action string

const (
	Hold      Action = "hold"
	ScaleUp   Action = "up"
	ScaleDown Action = "down"
)

// Decision is the outcome of one evaluation, with the numbers behind it.
type Decision struct {
	Time    time.Time
	Action  Action
	Before  int      // replicas when evaluated
	After   int      // replicas wanted (== Before on Hold)
	Desired int      // ceil(Sum/Target) clamped, before the time rules
	Sum     float64  // the metric summed over Samples
	Samples []Sample // the observations behind it
	Reason  string
}

// Values formats the per-replica metric values as "replica=value ..." for logs.
func (d Decision) Values(m Metric) string {
	var b strings.Builder
	for i, s := range d.Samples {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%g", s.Replica, s.Value(m))
	}
	return b.String()
}

// record is one past desired count, for the scale-down window.
type record struct {
	at      time.Time
	desired int
}

// Autoscaler is the state machine. It is not safe for concurrent use.
type Autoscaler struct {
	cfg        Config
	lastChange time.Time // the last scale decision, or the start
	changed    bool      // a scale decision was made (the up cool-down applies)
	history    []record  // desired counts within the last ScaleDownCooldown, oldest first
}

// New returns an autoscaler started at now (the scale-down window counts from here).
func New(cfg Config, now time.Time) (*Autoscaler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Autoscaler{cfg: cfg, lastChange: now}, nil
}

// Config returns the policy.
func (a *Autoscaler) Config() Config { return a.cfg }

// Evaluate makes one decision at time now for a fleet of current replicas whose load is
// samples (one per replica that answered; replicas still starting may be missing). Times must
// not go backwards between calls. The caller acts on the Decision (Scale to After) and must
// call Evaluate again with the new count next time.
func (a *Autoscaler) Evaluate(now time.Time, current int, samples []Sample) Decision {
	c := a.cfg
	d := Decision{Time: now, Action: Hold, Before: current, After: current, Samples: slices.Clone(samples)}
	for _, s := range samples {
		d.Sum += s.Value(c.Metric)
	}
	d.Desired = c.clamp(int(math.Ceil(d.Sum/c.Target - 1e-9)))

	// The bounds come first: a fleet outside them is brought back at once.
	if current < c.MinReplicas || current > c.MaxReplicas {
		return a.change(d, c.clamp(current), fmt.Sprintf("outside [%d, %d]", c.MinReplicas, c.MaxReplicas))
	}
	if len(samples) == 0 {
		d.Reason = "no replica reported load"
		return d
	}
	a.history = append(a.history, record{now, d.Desired})
	cut := 0
	for cut < len(a.history) && now.Sub(a.history[cut].at) > c.ScaleDownCooldown {
		cut++
	}
	a.history = a.history[cut:]
	sinceChange := now.Sub(a.lastChange)
	switch {
	case d.Desired > current:
		if a.changed && sinceChange < c.ScaleUpCooldown {
			d.Reason = fmt.Sprintf("desired %d but scale-up cool-down: %s left", d.Desired, (c.ScaleUpCooldown - sinceChange).Round(time.Millisecond))
			return d
		}
		return a.change(d, d.Desired, fmt.Sprintf("%s sum %g / target %g = %d", c.Metric, d.Sum, c.Target, d.Desired))
	case d.Desired < current:
		if sinceChange < c.ScaleDownCooldown {
			d.Reason = fmt.Sprintf("desired %d but scale-down cool-down: %s left", d.Desired, (c.ScaleDownCooldown - sinceChange).Round(time.Millisecond))
			return d
		}
		highest := 0
		for _, r := range a.history {
			highest = max(highest, r.desired)
		}
		if highest >= current {
			d.Reason = fmt.Sprintf("desired %d but %d within the last %s", d.Desired, highest, c.ScaleDownCooldown)
			return d
		}
		return a.change(d, highest, fmt.Sprintf("%s sum %g / target %g = %d; highest over the last %s: %d", c.Metric, d.Sum, c.Target, d.Desired, c.ScaleDownCooldown, highest))
	}
	d.Reason = fmt.Sprintf("at desired (%s sum %g / target %g)", c.Metric, d.Sum, c.Target)
	return d
}

// change turns d into a scale decision to n replicas.
func (a *Autoscaler) change(d Decision, n int, reason string) Decision {
	d.After, d.Reason = n, reason
	switch {
	case n > d.Before:
		d.Action = ScaleUp
	case n < d.Before:
		d.Action = ScaleDown
	default:
		return d
	}
	a.lastChange, a.changed = d.Time, true
	return d
}

func (c Config) clamp(n int) int { return min(max(n, c.MinReplicas), c.MaxReplicas) }
