// The driver around the Autoscaler state machine: every interval it asks the Scaler how many
// replicas there are, observes their load, evaluates, logs the decision with the numbers behind
// it and, when the decision changes the count, calls Scaler.Scale. It owns the autoscaler's
// Prometheus metrics.
package autoscale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Scaler is what the autoscaler acts through: a fleet of replicas whose count it can read and
// set.
//
// Replicas returns the count the fleet is set to (the target, including replicas still
// starting), not how many are ready; the controller compares its decision against it. Scale
// sets the count to n (n >= 0) and may return before the replicas are up or gone: adding one
// means starting it, removing one means draining it first (it stops getting new requests, its
// running ones finish, then it stops). Scale must be idempotent: calling it with the current
// count does nothing. Both must be safe to call from another goroutine than the fleet's own,
// and return an error, not panic, when the fleet cannot be reached.
type Scaler interface {
	Replicas(ctx context.Context) (int, error)
	Scale(ctx context.Context, n int) error
}

// ObserveFunc returns the load of every replica that answered (see Sample).
type ObserveFunc func(ctx context.Context) ([]Sample, error)

// ControllerOptions configure a Controller. Autoscaler, Scaler and Observe are required.
type ControllerOptions struct {
	Config     Config
	Scaler     Scaler
	Observe    ObserveFunc
	Interval   time.Duration // between evaluations in Run (default 1 s)
	Logger     *slog.Logger  // default: discard
	Registerer prometheus.Registerer
}

// Controller evaluates the autoscaler periodically and acts on its decisions.
type Controller struct {
	opts    ControllerOptions
	mu      sync.Mutex // one Step at a time; guards as, last and history
	as      *Autoscaler
	last    Decision
	history []Decision // the last HistoryLen decisions, oldest first (see History)
	desired prometheus.Gauge
	current prometheus.Gauge
	sum     prometheus.Gauge
	actions *prometheus.CounterVec
}

// NewController checks the options and registers the metrics
// (llmcloud_autoscaler_{replicas,desired_replicas,metric_sum,decisions_total}).
func NewController(opts ControllerOptions, now time.Time) (*Controller, error) {
	if opts.Scaler == nil || opts.Observe == nil {
		return nil, errors.New("autoscale: a Scaler and an Observe function are required")
	}
	as, err := New(opts.Config, now)
	if err != nil {
		return nil, err
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Controller{opts: opts, as: as,
		current: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmcloud_autoscaler_replicas", Help: "Replicas the fleet is set to."}),
		desired: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmcloud_autoscaler_desired_replicas", Help: "ceil(metric sum / target), clamped to the bounds."}),
		sum:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmcloud_autoscaler_metric_sum", Help: "The target metric summed over the replicas."}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud_autoscaler_decisions_total", Help: "Evaluations by action (hold, up, down)."}, []string{"action"}),
	}
	if opts.Registerer != nil {
		for _, m := range []prometheus.Collector{c.current, c.desired, c.sum, c.actions} {
			if err := opts.Registerer.Register(m); err != nil {
				return nil, fmt.Errorf("autoscale: register metrics: %w", err)
			}
		}
	}
	return c, nil
}

// Last returns the latest decision (zero before the first Step).
func (c *Controller) Last() Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// HistoryLen is how many decisions History keeps.
const HistoryLen = 50

// History returns the latest decisions, oldest first, at most HistoryLen. A Hold right after a
// Hold with the same replica count and desired count replaces it (a fleet holds every interval,
// counting down its cool-downs, and those lines would push the scaling decisions out), so the
// list is the fleet's recent changes with the latest reason at the end.
func (c *Controller) History() []Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Decision(nil), c.history...)
}

// remember appends d to the history (c.mu held).
func (c *Controller) remember(d Decision) {
	if n := len(c.history); n > 0 && d.Action == Hold && c.history[n-1].Action == Hold &&
		c.history[n-1].Before == d.Before && c.history[n-1].Desired == d.Desired {
		c.history[n-1] = d
		return
	}
	if len(c.history) == HistoryLen {
		copy(c.history, c.history[1:])
		c.history = c.history[:HistoryLen-1]
	}
	c.history = append(c.history, d)
}

// Step runs one evaluation at time now: read the count, observe, decide, log, act. A failed
// observation is a Hold with the error as its reason (the fleet is left alone); a failed Scale
// is returned and retried at the next Step.
func (c *Controller) Step(ctx context.Context, now time.Time) (Decision, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.opts.Scaler.Replicas(ctx)
	if err != nil {
		return Decision{}, fmt.Errorf("autoscale: read replicas: %w", err)
	}
	samples, err := c.opts.Observe(ctx)
	var d Decision
	if err != nil {
		d = Decision{Time: now, Action: Hold, Before: n, After: n, Desired: n, Reason: "observe: " + err.Error()}
	} else {
		d = c.as.Evaluate(now, n, samples)
	}
	c.last = d
	h := d
	h.Samples = nil // the history keeps only what the console shows
	c.remember(h)
	c.current.Set(float64(n))
	c.desired.Set(float64(d.Desired))
	c.sum.Set(d.Sum)
	c.actions.WithLabelValues(string(d.Action)).Inc()
	cfg := c.as.Config()
	attrs := []any{"action", string(d.Action), "before", d.Before, "after", d.After, "desired", d.Desired,
		"metric", string(cfg.Metric), "sum", d.Sum, "target", cfg.Target, "values", d.Values(cfg.Metric), "reason", d.Reason}
	if d.Action == Hold {
		c.opts.Logger.Debug("autoscale", attrs...)
		return d, nil
	}
	c.opts.Logger.Info("autoscale", attrs...)
	if err := c.opts.Scaler.Scale(ctx, d.After); err != nil {
		return d, fmt.Errorf("autoscale: scale %d -> %d: %w", d.Before, d.After, err)
	}
	return d, nil
}

// Run calls Step every Interval until ctx ends; Scale errors are logged, not fatal.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if _, err := c.Step(ctx, now); err != nil {
				c.opts.Logger.Warn("autoscale step failed", "err", err)
			}
		}
	}
}
