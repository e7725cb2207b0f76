// ScrapeLoad: a replica's load from its Prometheus text exposition (vLLM's metric names, which
// llmcloud serve exports too). Only three families are read, by a line scanner, so no
// Prometheus parser is needed.

package router

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Load is a replica's scraped load.
type Load struct {
	Running float64 // vllm:num_requests_running, summed over models
	Waiting float64 // vllm:num_requests_waiting, summed over models
	KVUsage float64 // vllm:kv_cache_usage_perc (or the older vllm:gpu_cache_usage_perc), 0..1, the largest over models
}

// ScrapeLoad GETs baseURL/metrics and reads the load of a vLLM-compatible replica. A replica
// exporting none of the three families is an error (it is not a vLLM-compatible server).
func ScrapeLoad(ctx context.Context, c *http.Client, baseURL string) (Load, error) {
	var l Load
	found := false
	if err := ScrapeMetrics(ctx, c, baseURL, func(name string, v float64) { found = l.add(name, v) || found }); err != nil {
		return Load{}, err
	}
	return l, loadFound(found)
}

// ParseLoad reads a Load from a Prometheus text exposition.
func ParseLoad(r io.Reader) (Load, error) {
	var l Load
	found := false
	if err := EachSample(r, func(name string, v float64) { found = l.add(name, v) || found }); err != nil {
		return Load{}, err
	}
	return l, loadFound(found)
}

// add folds one sample into l and reports whether it was one of the load families.
func (l *Load) add(name string, v float64) bool {
	switch name {
	case "vllm:num_requests_running":
		l.Running += v
	case "vllm:num_requests_waiting":
		l.Waiting += v
	case "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc":
		l.KVUsage = max(l.KVUsage, v)
	default:
		return false
	}
	return true
}

func loadFound(found bool) error {
	if !found {
		return fmt.Errorf("no vllm:num_requests_running, vllm:num_requests_waiting or vllm:kv_cache_usage_perc in the metrics")
	}
	return nil
}

// ScrapeMetrics GETs baseURL/metrics (Prometheus text exposition) and calls fn with the name
// and value of every `vllm:` sample; malformed lines are skipped.
func ScrapeMetrics(ctx context.Context, c *http.Client, baseURL string, fn func(name string, v float64)) error {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/metrics", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("GET %s/metrics: %s", baseURL, resp.Status)
	}
	return EachSample(io.LimitReader(resp.Body, 16<<20), fn)
}

// EachSample calls fn with the name and value of every `vllm:` sample of a Prometheus text
// exposition (label sets are skipped, values of one name over several label sets arrive one
// by one); malformed lines are skipped.
func EachSample(r io.Reader, fn func(name string, v float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "vllm:") {
			continue
		}
		if name, v, ok := sample(line); ok {
			fn(name, v)
		}
	}
	return sc.Err()
}

// sample splits `name{labels} value [timestamp]` into the name and the value.
func sample(line string) (name string, v float64, ok bool) {
	end := strings.IndexAny(line, "{ \t")
	if end < 0 {
		return "", 0, false
	}
	name, rest := line[:end], line[end:]
	if rest[0] == '{' {
		close := labelsEnd(rest)
		if close < 0 {
			return "", 0, false
		}
		rest = rest[close+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", 0, false
	}
	return name, v, true
}

// labelsEnd is the index of the '}' closing the label set s starts with (-1 if none); label
// values are quoted and may hold '}' or escaped quotes.
func labelsEnd(s string) int {
	inQuote := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && inQuote:
			i++
		case c == '"':
			inQuote = !inQuote
		case c == '}' && !inQuote:
			return i
		}
	}
	return -1
}
