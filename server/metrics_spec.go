// Speculative decoding's Prometheus counters, under vLLM's names, read from
// engine.Stats.Spec at scrape time: drafts, draft tokens, accepted tokens, and accepted tokens
// by draft position (label position). Like vLLM, they are exported only when the engine
// speculates.
package server

import (
	"strconv"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	specDrafts = prometheus.NewDesc("vllm:spec_decode_num_drafts_total",
		"Verifications of a sequence with at least one draft token.", []string{"model_name"}, nil)
	specDraftTokens = prometheus.NewDesc("vllm:spec_decode_num_draft_tokens_total",
		"Draft tokens verified.", []string{"model_name"}, nil)
	specAccepted = prometheus.NewDesc("vllm:spec_decode_num_accepted_tokens_total",
		"Draft tokens accepted.", []string{"model_name"}, nil)
	specAcceptedPerPos = prometheus.NewDesc("vllm:spec_decode_num_accepted_tokens_per_pos_total",
		"Draft tokens accepted, by position in the draft (0 = first).", []string{"model_name", "position"}, nil)
)

func describeSpec(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{specDrafts, specDraftTokens, specAccepted, specAcceptedPerPos} {
		ch <- d
	}
}

// collectSpec sends s's counters (nothing when speculation is off: no positions).
func collectSpec(ch chan<- prometheus.Metric, s engine.SpecStats, name string) {
	if len(s.AcceptedPerPos) == 0 {
		return
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{name}, labels...)...)
	}
	counter(specDrafts, s.Drafts)
	counter(specDraftTokens, s.DraftTokens)
	counter(specAccepted, s.AcceptedTokens)
	for pos, n := range s.AcceptedPerPos {
		counter(specAcceptedPerPos, n, strconv.Itoa(pos))
	}
}
