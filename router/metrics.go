// The router's Prometheus metrics (llmcloud_router_*), registered on the Registerer given to
// New. Per-backend series are deleted when a backend leaves the set.

package router

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests    *prometheus.CounterVec   // backend, code
	decisions   *prometheus.CounterVec   // policy, reason
	retries     prometheus.Counter       //
	latency     *prometheus.HistogramVec // backend: to response headers
	ttfb        *prometheus.HistogramVec // backend: to the first body byte
	lookups     prometheus.Counter
	hits        prometheus.Counter
	healthy     *prometheus.GaugeVec // backend
	inflight    *prometheus.GaugeVec // backend
	clientTotal *prometheus.CounterVec
	ejections   *prometheus.CounterVec // backend, reason
}

// latencyBuckets span a fast backend's answer (100 µs) to a long generation's first token.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud_router_requests_total",
			Help: "Upstream attempts by backend and status code (code=\"error\": no response)."}, []string{"backend", "code"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud_router_routing_decisions_total",
			Help: "Routing decisions by policy and reason."}, []string{"policy", "reason"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "llmcloud_router_retries_total",
			Help: "Requests sent again to another backend after a failure before any byte reached the client."}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmcloud_router_upstream_latency_seconds",
			Help: "From sending a request upstream to its response headers.", Buckets: latencyBuckets}, []string{"backend"}),
		ttfb: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmcloud_router_upstream_ttfb_seconds",
			Help: "From sending a request upstream to the first byte of its response body.", Buckets: latencyBuckets}, []string{"backend"}),
		lookups: prometheus.NewCounter(prometheus.CounterOpts{Name: "llmcloud_router_prefix_lookups_total",
			Help: "Requests whose prompt blocks were looked up in the prefix tables."}),
		hits: prometheus.NewCounter(prometheus.CounterOpts{Name: "llmcloud_router_prefix_hits_total",
			Help: "Prefix lookups routed to a backend holding a matching prefix."}),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llmcloud_router_backend_healthy",
			Help: "1 if the backend takes traffic, 0 if ejected."}, []string{"backend"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llmcloud_router_inflight",
			Help: "Requests in flight to the backend."}, []string{"backend"}),
		clientTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud_router_client_requests_total",
			Help: "Client requests by the status code the router answered (code=\"aborted\": cut mid-stream or client gone)."}, []string{"code"}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud_router_ejections_total",
			Help: "Backends taken out of rotation, by reason: probe, request (error or 5xx), stall (sent nothing with requests waiting), latency (probe RTT outlier), ttfb (no first byte in time)."}, []string{"backend", "reason"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.decisions, m.retries, m.latency, m.ttfb,
		m.lookups, m.hits, m.healthy, m.inflight, m.clientTotal, m.ejections} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// forget deletes the series of a backend that left the set.
func (m *metrics) forget(url string) {
	l := prometheus.Labels{"backend": url}
	m.requests.DeletePartialMatch(l)
	m.latency.DeletePartialMatch(l)
	m.ttfb.DeletePartialMatch(l)
	m.healthy.DeletePartialMatch(l)
	m.inflight.DeletePartialMatch(l)
	m.ejections.DeletePartialMatch(l)
}
