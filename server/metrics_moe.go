// The expert load statistics of a mixture-of-experts model in /metrics:
// llmcloud:moe_expert_tokens_total{model_name, layer, expert}, the tokens (rows run through
// the model, prompts and generated tokens) each layer's router sent to each expert since the
// engine started, read from engine.Stats.ExpertLoads at scrape time. A dense model has none.
package server

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var expertTokensDesc = prometheus.NewDesc("llmcloud:moe_expert_tokens_total",
	"Tokens a mixture-of-experts layer routed to each expert (each token counts once per expert it runs).",
	[]string{"model_name", "layer", "expert"}, nil)

func describeExperts(ch chan<- *prometheus.Desc) { ch <- expertTokensDesc }

func collectExperts(ch chan<- prometheus.Metric, loads map[int][]uint64, name string) {
	layers := make([]int, 0, len(loads))
	for l := range loads {
		layers = append(layers, l)
	}
	slices.Sort(layers)
	for _, l := range layers {
		ls := strconv.Itoa(l)
		for e, n := range loads[l] {
			ch <- prometheus.MustNewConstMetric(expertTokensDesc, prometheus.CounterValue, float64(n), name, ls, strconv.Itoa(e))
		}
	}
}
