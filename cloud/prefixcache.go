// The fleet's prefix-cache hit rate: each replica's vllm:prefix_cache_queries_total and
// vllm:prefix_cache_hits_total (prompt tokens looked up / found; vLLM's names, which
// llmcloud serve exports) read from its /metrics by a line scanner.
package cloud

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/llmcloud/llmcloud/router"
)

// PrefixCache is a replica's prefix-cache counters (prompt tokens, since it started).
type PrefixCache struct {
	QueriesTokens float64 `json:"queries_tokens"`
	HitsTokens    float64 `json:"hits_tokens"`
}

// HitRate is hits / queries (0 with no queries).
func (p PrefixCache) HitRate() float64 {
	if p.QueriesTokens == 0 {
		return 0
	}
	return p.HitsTokens / p.QueriesTokens
}

// ScrapePrefixCache GETs baseURL/metrics and sums the two counters over their label sets.
func ScrapePrefixCache(ctx context.Context, c *http.Client, baseURL string) (PrefixCache, error) {
	var p PrefixCache
	found := false
	if err := router.ScrapeMetrics(ctx, c, baseURL, func(name string, v float64) { found = p.add(name, v) || found }); err != nil {
		return PrefixCache{}, err
	}
	return p, prefixFound(found)
}

// ParsePrefixCache reads the counters from a Prometheus text exposition; it is an error if
// neither is there.
func ParsePrefixCache(r io.Reader) (PrefixCache, error) {
	var p PrefixCache
	found := false
	if err := router.EachSample(r, func(name string, v float64) { found = p.add(name, v) || found }); err != nil {
		return PrefixCache{}, err
	}
	return p, prefixFound(found)
}

// add folds one sample into p and reports whether it was one of the two counters.
func (p *PrefixCache) add(name string, v float64) bool {
	switch name {
	case "vllm:prefix_cache_queries_total":
		p.QueriesTokens += v
	case "vllm:prefix_cache_hits_total":
		p.HitsTokens += v
	default:
		return false
	}
	return true
}

func prefixFound(found bool) error {
	if !found {
		return fmt.Errorf("no vllm:prefix_cache_queries_total or vllm:prefix_cache_hits_total in the metrics")
	}
	return nil
}
