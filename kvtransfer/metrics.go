// This file is the transfers' Prometheus metrics. vLLM names no metric for KV transfer bytes,
// time and failures in general (only per connector), so these use the llmcloud: prefix, with a
// direction label: sent (a producer's exports) or received (a consumer's fetches).

package kvtransfer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Directions of the metrics' direction label.
const (
	Sent     = "sent"
	Received = "received"
)

// Metrics counts transfers. A nil *Metrics counts nothing.
type Metrics struct {
	bytes    *prometheus.CounterVec
	blocks   *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	failures *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud:kv_transfer_bytes_total",
			Help: "Bytes of KV transfers (wire format included), by direction."}, []string{"direction"}),
		blocks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud:kv_transfer_blocks_total",
			Help: "KV blocks transferred, by direction."}, []string{"direction"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmcloud:kv_transfer_seconds",
			Help:    "Time of one successful KV transfer (the export or the fetch, end to end), by direction.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}}, []string{"direction"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud:kv_transfer_failures_total",
			Help: "KV transfers that failed (the consumer then recomputes the prompt), by direction."}, []string{"direction"}),
	}
	for _, d := range []string{Sent, Received} { // present at zero from the start
		m.bytes.WithLabelValues(d)
		m.blocks.WithLabelValues(d)
		m.failures.WithLabelValues(d)
	}
	reg.MustRegister(m.bytes, m.blocks, m.seconds, m.failures)
	return m
}

func (m *Metrics) done(dir string, bytes int64, blocks int, d time.Duration) {
	if m == nil {
		return
	}
	m.bytes.WithLabelValues(dir).Add(float64(bytes))
	m.blocks.WithLabelValues(dir).Add(float64(blocks))
	m.seconds.WithLabelValues(dir).Observe(d.Seconds())
}

func (m *Metrics) fail(dir string) {
	if m != nil {
		m.failures.WithLabelValues(dir).Inc()
	}
}
