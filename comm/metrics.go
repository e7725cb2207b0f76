// Prometheus metrics of the collectives, registered on the Registerer given to Init.
package comm

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	ops     *prometheus.CounterVec   // by op and result (ok, error)
	seconds *prometheus.HistogramVec // by op
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmcloud_ccl_collectives_total", Help: "Collectives run, by op and result.",
		}, []string{"op", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "llmcloud_ccl_collective_seconds", Help: "Duration of collectives, by op.",
			Buckets: prometheus.ExponentialBuckets(1e-5, 4, 12),
		}, []string{"op"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.ops, m.seconds} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("comm: metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(op string, d time.Duration, err error) {
	res := "ok"
	if err != nil {
		res = "error"
	}
	m.ops.WithLabelValues(op, res).Inc()
	m.seconds.WithLabelValues(op).Observe(d.Seconds())
}
