// The serving group's weights in rank 0's /metrics:
// llmcloud:tp_rank_weight_bytes{rank}, the bytes of the weights each rank's forward binds, and
// llmcloud:tp_rank_weight_resident_bytes{rank}, those resident in the rank's process as it
// measured them (/proc/self/smaps: the model file's mapped pages and its copies of its
// blocks). Rank 0's are measured at scrape time, the others' when the group was set up.
package main

import (
	"strconv"

	"github.com/llmcloud/llmcloud/engine/dist"
	"github.com/llmcloud/llmcloud/model"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	rankWeightDesc = prometheus.NewDesc("llmcloud:tp_rank_weight_bytes",
		"Bytes of the weights a rank of the serving group binds (its tensor-parallel shard of its pipeline stage).",
		[]string{"rank"}, nil)
	rankResidentDesc = prometheus.NewDesc("llmcloud:tp_rank_weight_resident_bytes",
		"Weight bytes resident in a rank's process, measured by the rank from /proc/self/smaps (the model file's mapped pages and its copies of its blocks).",
		[]string{"rank"}, nil)
)

// rankWeightsCollector reports every rank's weight bytes: rank 0's from m, the others' from
// what they sent at setup.
type rankWeightsCollector struct {
	m     *model.Model
	ranks []dist.RankWeights
}

func (c *rankWeightsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rankWeightDesc
	ch <- rankResidentDesc
}

func (c *rankWeightsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.ranks {
		if w.Rank == 0 {
			w = dist.MeasureWeights(0, c.m)
		}
		r := strconv.Itoa(w.Rank)
		ch <- prometheus.MustNewConstMetric(rankWeightDesc, prometheus.GaugeValue, float64(w.Bound), r)
		if w.Resident() >= 0 {
			ch <- prometheus.MustNewConstMetric(rankResidentDesc, prometheus.GaugeValue, float64(w.Resident()), r)
		}
	}
}
