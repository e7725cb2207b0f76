// Package router is llmcloud's load balancer in front of OpenAI-compatible replicas (llmcloud
// serve, vLLM, llama-server): it proxies /v1/* to one healthy backend chosen by a policy
// (round-robin, least-load, session affinity, prefix-aware; policy.go, prefix.go), streams
// responses through chunk by chunk, retries on another replica while nothing has reached the
// client (proxy.go), bounds each upstream request by a TTFB and a stream idle timeout and ends a
// stream whose backend stalled with an error event (stall.go), checks backends actively (GET
// /health) and ejects them passively on connection errors and 5xx (health.go), ejects backends
// that stall with requests waiting or whose probe latency is an outlier, cancelling the requests
// in flight to them (outlier.go), scrapes their vLLM load metrics (load.go) and exports its own
// llmcloud_router_* metrics (metrics.go). It imports no compute code.
//
// This file holds the Router, its options and its backend set.
package router

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Router. Zero fields take the defaults noted.
type Options struct {
	Policy         string        // "round-robin" (default) | "least-load" | "session" | "prefix" | "pd"
	HealthInterval time.Duration // active GET /health probe period (default 1s)
	HealthTimeout  time.Duration // limit of one probe (default 500ms)
	RequestTimeout time.Duration // per upstream request (default 10m)
	TTFBTimeout    time.Duration // from sending a request to its first response byte (default 120s)
	StreamIdle     time.Duration // largest gap between two response reads once the body started (default 30s)
	// StallTimeout ejects a backend with requests in flight that sent no byte at all (responses,
	// probe answers) for this long. Default max(1.5s, HealthInterval+HealthTimeout); smaller
	// than HealthInterval+HealthTimeout is an error (a busy backend answering probes would stall).
	StallTimeout   time.Duration
	OutlierFactor  float64       // latency outlier: probe RTT EWMA above this × the peers' median (default 3; -1: off)
	OutlierFloor   time.Duration // ... and above this (default 250ms)
	EjectionPeriod time.Duration // a latency outlier stays out this long (default 10s)
	MaxRetries     int           // retries on another replica before the first byte of the response body is sent to the client (default 2; -1: none)
	MaxBodyBytes   int64         // largest request body (default 32 MiB; 413 beyond)
	Logger         *slog.Logger  // default: discard
	Registerer     prometheus.Registerer
	Client         *http.Client // optional: its Transport carries upstream requests
	// PDMinPromptBytes: under policy pd, a prompt (or rendered chat) shorter than this goes to
	// a consumer alone, which computes it itself (a short prompt gains nothing from a transfer);
	// 0: every generation is disaggregated.
	PDMinPromptBytes int
	// PDSequential: under policy pd, the request goes to the consumer only after the producer
	// has answered its prefill (the transfer then starts after the prefill). By default both
	// are sent at once and the consumer's transfer streams the blocks as the producer computes
	// them.
	PDSequential bool
	// UI serves the web console (package ui) at GET / and /ui/ instead of proxying those two
	// paths; /console/api/* is served either way (console.go).
	UI bool
	// APIKey, when set, is required (Authorization: Bearer) on /v1/* and /console/api/*; the
	// console's page stays open (it asks for the key). Requests carry the client's header on
	// to the backends, so backends with the same key accept them.
	APIKey string
	// BackendKey is sent to the backends when the router scrapes their /console/api/* (their
	// --api-key); the health probes and load scrapes need none.
	BackendKey string
}

// BackendStatus is a snapshot of one backend.
type BackendStatus struct {
	URL       string   `json:"url"`
	Healthy   bool     `json:"healthy"`
	Inflight  int      `json:"inflight"`
	Running   float64  `json:"running"`
	Waiting   float64  `json:"waiting"`
	KVUsage   float64  `json:"kv_usage"`
	Requests  int64    `json:"requests"` // upstream attempts
	Failures  int64    `json:"failures"` // attempts that failed (no response, 5xx, cut mid-body)
	LastError string   `json:"last_error,omitempty"`
	Reason    string   `json:"ejected_by,omitempty"`   // probe, request, stall, latency, ttfb (when not healthy)
	ProbeRTT  float64  `json:"probe_rtt_ms,omitempty"` // EWMA of the health probes' round trips
	Models    []string `json:"models,omitempty"`       // what its GET /v1/models lists (none: it may serve any model)
	KVRole    string   `json:"kv_role,omitempty"`      // its disaggregated prefill/decode role (pd.go)
}

// backend is one replica. The atomics are touched on the hot path; the rest under Router.mu.
type backend struct {
	url      string // normalized: scheme://host[:port][/path], no trailing slash
	host     string // http:// backends: host:port for the connection pool ("" for https)
	path     string // the URL's path, prefixed to request paths
	inflight atomic.Int64
	requests atomic.Int64
	failures atomic.Int64
	probing  atomic.Bool
	lastByte atomic.Int64 // Router.now() when the backend last sent any byte
	calls    callSet      // requests in flight, cancelled on ejection (outlier.go)

	healthy     bool
	probed      bool      // a probe or a response has said something about it
	timeouts    int       // consecutive probe timeouts
	reason      string    // why it was last ejected: probe, request, stall, latency, ttfb
	rtt         float64   // EWMA of probe round trips, seconds (0: no sample yet)
	outUntil    time.Time // latency ejection: probes do not bring it back before this
	load        Load
	models      []string // GET /v1/models ids, sorted; nil: lists none (a wildcard) (models.go)
	modelsKnown bool     // models has been fetched at least once
	kvRole      string   // kv_role on its /v1/models: producer, consumer, both ("": none) (pd.go)
	lastError   string
	inflightG   prometheus.Gauge
	latencyObs  prometheus.Observer
	ttfbObs     prometheus.Observer
}

// Router routes requests to backends. Create it with New.
type Router struct {
	opts      Options
	log       *slog.Logger
	transport http.RoundTripper
	pool      *connPool // http:// backends (nil when Options.Client is given)
	probe     *http.Client
	policy    Policy
	wantSess  bool
	wantText  bool
	m         *metrics
	pd        *pdMetrics // policy pd (pd.go), else nil
	gatherer  prometheus.Gatherer
	idPrefix  string
	idSeq     atomic.Uint64
	kick      chan struct{} // SetBackends asks Run for an immediate probe
	epoch     time.Time     // Router.now counts from here (monotonic)

	mu       sync.RWMutex
	backends []*backend   // sorted by URL
	listing  atomic.Int64 // backends that list models (written under mu)

	pmu sync.Mutex // serializes the policy
}

// New returns a Router with no backends.
func New(opts Options) (*Router, error) {
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 10 * time.Minute
	}
	if opts.HealthTimeout <= 0 {
		opts.HealthTimeout = 500 * time.Millisecond
	}
	if opts.TTFBTimeout <= 0 {
		opts.TTFBTimeout = 120 * time.Second
	}
	if opts.StreamIdle <= 0 {
		opts.StreamIdle = 30 * time.Second
	}
	minStall := opts.HealthInterval + opts.HealthTimeout
	switch {
	case opts.StallTimeout <= 0:
		opts.StallTimeout = max(1500*time.Millisecond, minStall)
	case opts.StallTimeout < minStall:
		return nil, fmt.Errorf("router: stall timeout %v is below health interval + health timeout (%v): a busy backend answering probes would be ejected", opts.StallTimeout, minStall)
	}
	if opts.OutlierFactor == 0 {
		opts.OutlierFactor = 3
	}
	if opts.OutlierFloor <= 0 {
		opts.OutlierFloor = 250 * time.Millisecond
	}
	if opts.EjectionPeriod <= 0 {
		opts.EjectionPeriod = 10 * time.Second
	}
	switch {
	case opts.MaxRetries == 0:
		opts.MaxRetries = 2
	case opts.MaxRetries < 0:
		opts.MaxRetries = 0
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 32 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	pol, err := NewPolicy(opts.Policy)
	if err != nil {
		return nil, err
	}
	opts.Policy = pol.Name()
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("router: registering metrics: %w", err)
	}
	gatherer, _ := reg.(prometheus.Gatherer)
	var rt http.RoundTripper = newTransport()
	var pool *connPool
	switch {
	case opts.Client == nil:
		pool = newConnPool()
	case opts.Client.Transport != nil:
		rt = opts.Client.Transport
	}
	var id [4]byte
	rand.Read(id[:])
	r := &Router{opts: opts, log: opts.Logger, transport: rt, pool: pool, policy: pol, m: m, gatherer: gatherer,
		idPrefix: "rtr-" + hex.EncodeToString(id[:]) + "-", kick: make(chan struct{}, 1), epoch: time.Now(),
		probe: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	r.wantSess, r.wantText = needs(pol)
	if pol.Name() == PD {
		if r.pd, err = newPDMetrics(reg); err != nil {
			return nil, fmt.Errorf("router: registering metrics: %w", err)
		}
	}
	return r, nil
}

// newTransport keeps many idle connections per backend (Go's default of 2 would reconnect under
// load) and passes bodies through untouched (no gzip).
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     32 << 10,
		ReadBufferSize:      32 << 10,
	}
}

// NormalizeURL checks a backend URL (http or https, with a host) and drops a trailing slash.
func NormalizeURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("backend %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("backend %q: want http(s)://host:port[/path]", s)
	}
	return strings.TrimSuffix(s, "/"), nil
}

// SetBackends replaces the backend set. Backends that stay keep their health, load and counters;
// new ones take traffic at once and are probed at once (a failed probe or request ejects them);
// removed ones finish the requests they have. Invalid URLs are logged and skipped, duplicates merged. Safe at any time
// from any goroutine.
func (r *Router) SetBackends(urls []string) {
	want := make(map[string]bool, len(urls))
	for _, u := range urls {
		n, err := NormalizeURL(u)
		if err != nil {
			r.log.Warn("router: skipping backend", "err", err)
			continue
		}
		want[n] = true
	}
	r.mu.Lock()
	next := make([]*backend, 0, len(want))
	var removed []string
	added := 0
	for _, b := range r.backends {
		if want[b.url] {
			next = append(next, b)
			delete(want, b.url)
		} else {
			removed = append(removed, b.url)
		}
	}
	for u := range want {
		b := &backend{url: u, inflightG: r.m.inflight.WithLabelValues(u),
			latencyObs: r.m.latency.WithLabelValues(u), ttfbObs: r.m.ttfb.WithLabelValues(u)}
		if pu, err := url.Parse(u); err == nil && pu.Scheme == "http" {
			b.host, b.path = poolHost(pu), pu.Path
		}
		r.m.healthy.WithLabelValues(u).Set(0)
		next = append(next, b)
		added++
	}
	slices.SortFunc(next, func(a, b *backend) int { return cmp.Compare(a.url, b.url) })
	r.backends = next
	r.recountListing()
	r.mu.Unlock()

	if len(removed) > 0 && r.pool != nil {
		kept := map[string]bool{}
		for _, b := range next {
			kept[b.host] = true
		}
		for _, u := range removed {
			if pu, err := url.Parse(u); err == nil && pu.Scheme == "http" && !kept[poolHost(pu)] {
				r.pool.closeHost(poolHost(pu))
			}
		}
	}
	if len(removed) > 0 {
		r.pmu.Lock()
		for _, u := range removed {
			r.policy.Forget(u)
		}
		r.pmu.Unlock()
		for _, u := range removed {
			r.m.forget(u)
		}
	}
	if added > 0 || len(removed) > 0 {
		r.log.Info("router: backends", "count", len(next), "added", added, "removed", removed)
	}
	if added > 0 {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// poolHost is the host:port the connection pool dials for an http:// URL.
func poolHost(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}

// Backends returns a snapshot of the backends, sorted by URL.
func (r *Router) Backends() []BackendStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]BackendStatus, len(r.backends))
	for i, b := range r.backends {
		out[i] = BackendStatus{URL: b.url, Healthy: b.healthy, Inflight: int(b.inflight.Load()),
			Running: b.load.Running, Waiting: b.load.Waiting, KVUsage: b.load.KVUsage,
			Requests: b.requests.Load(), Failures: b.failures.Load(), LastError: b.lastError,
			ProbeRTT: math.Round(b.rtt*1e6) / 1e3, Models: b.models, KVRole: b.kvRole}
		if !b.healthy && b.probed {
			out[i].Reason = b.reason
		}
	}
	return out
}

// Policy is the name of the routing policy in use.
func (r *Router) Policy() string { return r.opts.Policy }

// setHealth records what a probe or a request said of b; err == nil means up (unless b is a
// latency outlier still in its ejection period). A backend going down is an ejection: why is
// its reason (probe, request, stall, latency, ttfb), counted in the metrics; when it means the
// backend stopped answering, every request in flight to it is cancelled (outlier.go). It
// reports whether b went down.
func (r *Router) setHealth(b *backend, err error, why string) bool {
	r.mu.Lock()
	was, wasProbed := b.healthy, b.probed
	b.probed = true
	if err == nil {
		if time.Now().Before(b.outUntil) {
			r.mu.Unlock()
			return false
		}
		b.healthy, b.timeouts, b.lastError = true, 0, "" // a recovered backend shows no stale error
	} else {
		b.healthy = false
		b.lastError = err.Error()
		if was || !wasProbed {
			b.reason = why
		}
	}
	now := b.healthy
	r.mu.Unlock()
	ejected := err != nil && (was || !wasProbed)
	if ejected {
		r.m.ejections.WithLabelValues(b.url, why).Inc()
		if stopsAnswering(err, why) {
			b.calls.cancelAll(&ejectedError{backend: b.url, reason: why})
		}
	}
	if was != now || !wasProbed {
		v := 0.0
		if now {
			v = 1
		}
		r.m.healthy.WithLabelValues(b.url).Set(v)
		if now {
			r.log.Info("router: backend up", "backend", b.url, "by", why)
		} else {
			r.log.Warn("router: backend down", "backend", b.url, "by", why, "err", err)
		}
	}
	return ejected
}

// stopsAnswering: the ejections that cancel the requests in flight. A backend that answers
// (a 5xx, a non-200 probe) or refuses new connections may be draining after SIGTERM and is left
// to finish what it has; a dead one fails its requests by itself (reset connections).
func stopsAnswering(err error, why string) bool {
	switch why {
	case "stall", "ttfb", "latency":
		return true
	case "probe":
		return errors.Is(err, errTimeout)
	}
	return false
}

// errTimeout marks probe timeouts, which eject only on the second in a row.
var errTimeout = errors.New("timeout")
