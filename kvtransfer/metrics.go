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

	early        prometheus.Counter   // producer: blocks ready before the prefill finished
	afterPrefill prometheus.Histogram // producer: prefill's end to the export's last byte
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
	m.early = prometheus.NewCounter(prometheus.CounterOpts{Name: "llmcloud:kv_transfer_overlapped_blocks_total",
		Help: "KV blocks a producer's exports had ready (copied from the pool) while the prefill of their prompt was still computing it: the transfer overlapped with the prefill."})
	m.afterPrefill = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "llmcloud:kv_transfer_after_prefill_seconds",
		Help:    "Producer: time from the end of a held prefill (X-KV-Transfer-Hold) to the last byte of its prompt's export (0 when the export had every block before the prefill ended).",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}})
	for _, d := range []string{Sent, Received} { // present at zero from the start
		m.bytes.WithLabelValues(d)
		m.blocks.WithLabelValues(d)
		m.failures.WithLabelValues(d)
	}
	reg.MustRegister(m.bytes, m.blocks, m.seconds, m.failures, m.early, m.afterPrefill)
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

// overlap records an export's overlap with the prefill it followed (Source.Overlap).
func (m *Metrics) overlap(early int, prefillEnd time.Time, ok bool) {
	if m == nil {
		return
	}
	m.early.Add(float64(early))
	switch {
	case ok:
		m.afterPrefill.Observe(max(0, time.Since(prefillEnd).Seconds()))
	case early > 0:
		m.afterPrefill.Observe(0) // every block was sent before the prefill's last step ended
	}
}
