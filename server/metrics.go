// Prometheus metrics under vLLM's names (vllm:...), each with a model_name label. Gauges and
// counters the engine already keeps are read from engine.Stats at scrape time; per-request
// histograms are observed when a request finishes, inter-token latency as tokens stream, and
// vllm:iteration_tokens_total from the engine's step hook; speculative decoding's counters
// are in metrics_spec.go.
package server

import (
	"sync/atomic"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

type metrics struct {
	model atomic.Pointer[string]

	success        *prometheus.CounterVec
	ttft           *prometheus.HistogramVec
	itl            *prometheus.HistogramVec
	e2e            *prometheus.HistogramVec
	queue          *prometheus.HistogramVec
	prefill        *prometheus.HistogramVec
	decode         *prometheus.HistogramVec
	promptTokens   *prometheus.HistogramVec
	genTokens      *prometheus.HistogramVec
	iterationToken *prometheus.HistogramVec
}

var (
	latencyBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
		0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10}
	tokenBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
		20000, 50000, 100000}
)

// newMetrics registers everything on reg. stats reads the engine (false before Attach);
// name is the model_name label when known at New (else set by setModel before traffic).
func newMetrics(reg *prometheus.Registry, stats func() (engine.Stats, bool), name string) *metrics {
	m := &metrics{}
	m.model.Store(&name)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(&statsCollector{m: m, stats: stats})
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets},
			append([]string{"model_name"}, labels...))
		reg.MustRegister(h)
		return h
	}
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
		Help: "Finished requests by finish reason."}, []string{"model_name", "finished_reason"})
	reg.MustRegister(m.success)
	m.ttft = hist("vllm:time_to_first_token_seconds", "Time to first token.", latencyBuckets)
	m.itl = hist("vllm:inter_token_latency_seconds", "Time between consecutive output tokens.", itlBuckets)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Arrival to finish of a request.", latencyBuckets)
	m.queue = hist("vllm:request_queue_time_seconds", "Time a request waited before its first step.", latencyBuckets)
	m.prefill = hist("vllm:request_prefill_time_seconds", "First step to first token.", latencyBuckets)
	m.decode = hist("vllm:request_decode_time_seconds", "First token to last token.", latencyBuckets)
	m.promptTokens = hist("vllm:request_prompt_tokens", "Prompt tokens per request.", tokenBuckets)
	m.genTokens = hist("vllm:request_generation_tokens", "Generated tokens per request.", tokenBuckets)
	m.iterationToken = hist("vllm:iteration_tokens_total", "Tokens per engine step.", tokenBuckets)
	return m
}

func (m *metrics) setModel(name string) { m.model.Store(&name) }
func (m *metrics) name() string         { return *m.model.Load() }

func (m *metrics) observeStep(s engine.StepMetrics) {
	m.iterationToken.WithLabelValues(m.name()).Observe(float64(s.NumTokens))
}

// observeTokens records the inter-token latency of n tokens that arrived together, gapSeconds
// after the previous token.
func (m *metrics) observeTokens(n int, gapSeconds float64) {
	if n <= 0 || gapSeconds < 0 {
		return
	}
	h := m.itl.WithLabelValues(m.name())
	for range n {
		h.Observe(gapSeconds / float64(n))
	}
}

// observeFinished records a finished request from its last Output.
func (m *metrics) observeFinished(o engine.Output) {
	name := m.name()
	m.success.WithLabelValues(name, o.FinishReason).Inc()
	mt := o.Metrics
	if !mt.FirstToken.IsZero() {
		m.ttft.WithLabelValues(name).Observe(mt.TTFT().Seconds())
		m.prefill.WithLabelValues(name).Observe(mt.PrefillTime().Seconds())
		m.decode.WithLabelValues(name).Observe(mt.DecodeTime().Seconds())
	}
	if !mt.FirstScheduled.IsZero() {
		m.queue.WithLabelValues(name).Observe(mt.QueueTime().Seconds())
	}
	if !mt.Finished.IsZero() && !mt.Arrival.IsZero() {
		m.e2e.WithLabelValues(name).Observe(mt.Finished.Sub(mt.Arrival).Seconds())
	}
	m.promptTokens.WithLabelValues(name).Observe(float64(o.PromptTokens))
	m.genTokens.WithLabelValues(name).Observe(float64(o.OutputTokens))
}

// statsCollector exposes engine.Stats as vLLM's gauges and counters at scrape time.
type statsCollector struct {
	m     *metrics
	stats func() (engine.Stats, bool)
}

var statDescs = []struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(engine.Stats) float64
}{
	{prometheus.NewDesc("vllm:num_requests_running", "Requests in the running batch.", []string{"model_name"}, nil),
		prometheus.GaugeValue, func(s engine.Stats) float64 { return float64(s.Running) }},
	{prometheus.NewDesc("vllm:num_requests_waiting", "Requests waiting to be scheduled.", []string{"model_name"}, nil),
		prometheus.GaugeValue, func(s engine.Stats) float64 { return float64(s.Waiting) }},
	{prometheus.NewDesc("vllm:kv_cache_usage_perc", "Fraction of KV-cache blocks in use (0..1).", []string{"model_name"}, nil),
		prometheus.GaugeValue, func(s engine.Stats) float64 { return s.KVUsage }},
	{prometheus.NewDesc("vllm:prompt_tokens_total", "Prompt tokens of admitted requests.", []string{"model_name"}, nil),
		prometheus.CounterValue, func(s engine.Stats) float64 { return float64(s.PromptTokens) }},
	{prometheus.NewDesc("vllm:generation_tokens_total", "Generated tokens.", []string{"model_name"}, nil),
		prometheus.CounterValue, func(s engine.Stats) float64 { return float64(s.GenerationTokens) }},
	{prometheus.NewDesc("vllm:num_preemptions_total", "Preemptions (by recompute).", []string{"model_name"}, nil),
		prometheus.CounterValue, func(s engine.Stats) float64 { return float64(s.Preemptions) }},
	{prometheus.NewDesc("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", []string{"model_name"}, nil),
		prometheus.CounterValue, func(s engine.Stats) float64 { return float64(s.PrefixQueryTokens) }},
	{prometheus.NewDesc("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", []string{"model_name"}, nil),
		prometheus.CounterValue, func(s engine.Stats) float64 { return float64(s.PrefixHitTokens) }},
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range statDescs {
		ch <- d.desc
	}
	describeSpec(ch)
	describeExperts(ch)
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s, _ := c.stats() // zeros before the model is attached
	name := c.m.name()
	for _, d := range statDescs {
		ch <- prometheus.MustNewConstMetric(d.desc, d.kind, d.value(s), name)
	}
	collectSpec(ch, s.Spec, name)
	collectExperts(ch, s.ExpertLoads, name)
}
