// The fleet's prefix-cache hit rate: each replica's vllm:prefix_cache_queries_total and
// vllm:prefix_cache_hits_total (prompt tokens looked up / found; vLLM's names, which
// llmcloud serve exports) read from its /metrics by a line scanner.
package cloud

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/metrics", nil)
	if err != nil {
		return PrefixCache{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return PrefixCache{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return PrefixCache{}, fmt.Errorf("GET %s/metrics: %s", baseURL, resp.Status)
	}
	return ParsePrefixCache(io.LimitReader(resp.Body, 16<<20))
}

// ParsePrefixCache reads the counters from a Prometheus text exposition; it is an error if
// neither is there.
func ParsePrefixCache(r io.Reader) (PrefixCache, error) {
	var p PrefixCache
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.IndexAny(line, "{ ")
		if i < 0 {
			continue
		}
		var dst *float64
		switch line[:i] {
		case "vllm:prefix_cache_queries_total":
			dst = &p.QueriesTokens
		case "vllm:prefix_cache_hits_total":
			dst = &p.HitsTokens
		default:
			continue
		}
		// name{labels} value [timestamp]; label values may hold spaces, so cut after the '}'.
		rest := line[i:]
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return PrefixCache{}, fmt.Errorf("malformed metric line %q", line)
			}
			rest = rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return PrefixCache{}, fmt.Errorf("malformed metric line %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return PrefixCache{}, fmt.Errorf("metric line %q: %v", line, err)
		}
		*dst += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return PrefixCache{}, err
	}
	if !found {
		return PrefixCache{}, fmt.Errorf("no vllm:prefix_cache_queries_total or vllm:prefix_cache_hits_total in the metrics")
	}
	return p, nil
}
