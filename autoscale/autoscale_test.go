package autoscale

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestScenarios replays testdata/scenarios.txt (its header explains the format).
func TestScenarios(t *testing.T) {
	f, err := os.Open("testdata/scenarios.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var as *Autoscaler
	var cfgLine string
	sc := bufio.NewScanner(f)
	lineNo, evals := 0, 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "config "); ok {
			cfg, err := parseConfig(rest)
			if err != nil {
				t.Fatalf("line %d: %v", lineNo, err)
			}
			if as, err = New(cfg, t0); err != nil {
				t.Fatalf("line %d: %v", lineNo, err)
			}
			cfgLine = rest
			continue
		}
		if as == nil {
			t.Fatalf("line %d: evaluation before any config", lineNo)
		}
		now, n, samples, wantAction, wantAfter, err := parseEval(line)
		if err != nil {
			t.Fatalf("line %d: %v", lineNo, err)
		}
		d := as.Evaluate(t0.Add(now), n, samples)
		evals++
		if d.Action != wantAction || d.After != wantAfter {
			t.Errorf("line %d (%s): %s\n got %s %d (desired %d, sum %g: %s), want %s %d",
				lineNo, cfgLine, line, d.Action, d.After, d.Desired, d.Sum, d.Reason, wantAction, wantAfter)
		}
		if d.Before != n || d.Reason == "" || len(d.Samples) != len(samples) {
			t.Errorf("line %d: decision does not carry its inputs: %+v", lineNo, d)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if evals < 20 {
		t.Fatalf("only %d evaluations read", evals)
	}
}

func parseConfig(s string) (Config, error) {
	c := DefaultConfig()
	for _, kv := range strings.Fields(s) {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "metric":
			c.Metric = Metric(v)
		case "target":
			c.Target, err = strconv.ParseFloat(v, 64)
		case "min":
			c.MinReplicas, err = strconv.Atoi(v)
		case "max":
			c.MaxReplicas, err = strconv.Atoi(v)
		case "up":
			c.ScaleUpCooldown, err = time.ParseDuration(v)
		case "down":
			c.ScaleDownCooldown, err = time.ParseDuration(v)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

func parseEval(line string) (now time.Duration, n int, samples []Sample, action Action, after int, err error) {
	lhs, rhs, ok := strings.Cut(line, "->")
	if !ok {
		return 0, 0, nil, "", 0, errors.New("no ->")
	}
	for _, kv := range strings.Fields(lhs) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "t":
			var s float64
			s, err = strconv.ParseFloat(v, 64)
			now = time.Duration(s * float64(time.Second))
		case "n":
			n, err = strconv.Atoi(v)
		case "values":
			if v == "-" {
				continue
			}
			for i, x := range strings.Split(v, ",") {
				f, perr := strconv.ParseFloat(x, 64)
				if perr != nil {
					return 0, 0, nil, "", 0, perr
				}
				// The same value in every field: the config's metric picks one.
				samples = append(samples, Sample{Replica: fmt.Sprintf("r%d", i+1), Waiting: f, Running: f, KVUsage: f})
			}
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return
		}
	}
	f := strings.Fields(rhs)
	if len(f) != 2 {
		return 0, 0, nil, "", 0, fmt.Errorf("want 'ACTION AFTER' after ->, got %q", rhs)
	}
	action = Action(f[0])
	after, err = strconv.Atoi(f[1])
	return
}

// The metric chosen is the one summed: the other fields of a sample do not count.
func TestMetricSelects(t *testing.T) {
	s := []Sample{{Waiting: 4, Running: 1, KVUsage: 0.1}, {Waiting: 4, Running: 1, KVUsage: 0.1}}
	for _, tc := range []struct {
		m    Metric
		want int
	}{{MetricWaiting, 4}, {MetricRunning, 1}, {MetricKVUsage, 1}} {
		cfg := Config{Metric: tc.m, Target: 2, MinReplicas: 1, MaxReplicas: 10}
		if tc.m == MetricKVUsage {
			cfg.Target = 0.5
		}
		a, err := New(cfg, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if d := a.Evaluate(time.Time{}, 1, s); d.Desired != tc.want {
			t.Errorf("%s: desired %d, want %d (sum %g)", tc.m, d.Desired, tc.want, d.Sum)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.Metric = "gpu" },
		func(c *Config) { c.Target = 0 },
		func(c *Config) { c.Target = -1 },
		func(c *Config) { c.MinReplicas = -1 },
		func(c *Config) { c.MaxReplicas = 0 },
		func(c *Config) { c.MinReplicas, c.MaxReplicas = 3, 2 },
		func(c *Config) { c.ScaleDownCooldown = -time.Second },
	}
	for i, f := range bad {
		c := DefaultConfig()
		f(&c)
		if _, err := New(c, time.Time{}); err == nil {
			t.Errorf("case %d: %+v accepted", i, c)
		}
	}
}

// fleet is a Scaler over a plain count that records what it was asked.
type fleet struct {
	n     int
	calls []int
	err   error
}

func (f *fleet) Replicas(context.Context) (int, error) { return f.n, nil }
func (f *fleet) Scale(_ context.Context, n int) error {
	f.calls = append(f.calls, n)
	if f.err != nil {
		return f.err
	}
	f.n = n
	return nil
}

// The controller acts on decisions, logs each one with the metric values behind it, and
// exports the numbers.
func TestControllerStep(t *testing.T) {
	fl := &fleet{n: 1}
	load := []Sample{{Replica: "http://a", Waiting: 7}}
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	t0 := time.Unix(1000, 0)
	cfg := Config{Metric: MetricWaiting, Target: 2, MinReplicas: 1, MaxReplicas: 3, ScaleUpCooldown: 5 * time.Second, ScaleDownCooldown: 10 * time.Second}
	var observeErr error
	c, err := NewController(ControllerOptions{Config: cfg, Scaler: fl,
		Observe:    func(context.Context) ([]Sample, error) { return load, observeErr },
		Logger:     slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer: reg}, t0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := c.Step(ctx, t0.Add(time.Second))
	if err != nil || d.Action != ScaleUp || fl.n != 3 {
		t.Fatalf("step 1: %+v err %v, fleet %d", d, err, fl.n)
	}
	if !strings.Contains(logs.String(), `level=INFO msg=autoscale action=up before=1 after=3 desired=3 metric=waiting sum=7 target=2 values="http://a=7" reason="waiting sum 7 / target 2 = 3"`) {
		t.Errorf("scale-up log line missing the numbers:\n%s", logs.String())
	}
	if got := testutil.ToFloat64(c.desired); got != 3 {
		t.Errorf("desired gauge %g", got)
	}
	load = []Sample{{Replica: "a", Waiting: 0}, {Replica: "b"}, {Replica: "c"}}
	for s := 2; s <= 11; s++ {
		if d, _ := c.Step(ctx, t0.Add(time.Duration(s)*time.Second)); d.Action != Hold {
			t.Fatalf("t=%ds: %+v, want hold inside the down window", s, d)
		}
	}
	observeErr = errors.New("router down")
	if d, _ := c.Step(ctx, t0.Add(30*time.Second)); d.Action != Hold || !strings.Contains(d.Reason, "router down") {
		t.Fatalf("observe error: %+v", d)
	}
	observeErr = nil
	fl.err = errors.New("api server gone")
	if _, err := c.Step(ctx, t0.Add(31*time.Second)); err == nil || fl.n != 3 {
		t.Fatalf("a failed Scale was not reported (err %v, fleet %d)", err, fl.n)
	}
	fl.err = nil
	// The autoscaler's decision stands; the next step retries it.
	if d, err := c.Step(ctx, t0.Add(42*time.Second)); err != nil || d.Action != ScaleDown || fl.n != 1 {
		t.Fatalf("retry: %+v err %v fleet %d", d, err, fl.n)
	}
	if got := testutil.ToFloat64(c.actions.WithLabelValues("hold")); got != 11 {
		t.Errorf("hold decisions %g, want 11", got)
	}
	if got := testutil.ToFloat64(c.actions.WithLabelValues("down")); got != 2 {
		t.Errorf("down decisions %g, want 2 (the failed one and its retry)", got)
	}
	if _, err := NewController(ControllerOptions{Config: cfg, Scaler: fl, Observe: c.opts.Observe, Registerer: reg}, t0); err == nil {
		t.Error("registering twice on one registry should fail")
	}
	h := c.History()
	if len(h) != 5 || h[0].Action != ScaleUp || h[len(h)-1].Action != ScaleDown || !reflect.DeepEqual(h[len(h)-1], stripped(c.Last())) {
		t.Fatalf("history of 14 steps: %d decisions %+v", len(h), h)
	}
	for i, d := range h {
		if d.Samples != nil {
			t.Errorf("history[%d] keeps its samples", i)
		}
		if i > 0 && d.Action == Hold && h[i-1].Action == Hold && d.Desired == h[i-1].Desired && d.Before == h[i-1].Before {
			t.Errorf("history[%d-%d]: a repeated hold kept twice: %q", i-1, i, d.Reason)
		}
	}
	if !strings.Contains(h[1].Reason, "within the last 10s") {
		t.Errorf("the collapsed holds keep the first reason %q, want the latest", h[1].Reason)
	}
	// Distinct decisions beyond HistoryLen push the oldest out.
	for s := range HistoryLen + 5 {
		c.remember(Decision{Action: ScaleUp, Before: s, After: s + 1, Reason: fmt.Sprint(s)})
	}
	h = c.History()
	if len(h) != HistoryLen || h[0].Reason != "5" || h[HistoryLen-1].Reason != fmt.Sprint(HistoryLen+4) {
		t.Fatalf("history after %d more: %d decisions, first %q", HistoryLen+5, len(h), h[0].Reason)
	}
}

func stripped(d Decision) Decision { d.Samples = nil; return d }
