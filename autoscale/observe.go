// Observing replicas through the router: the router's GET /router/status lists every backend
// with its health and the load it last scraped from the backend's /metrics (vLLM's gauges), so
// an autoscaler running beside the router (as in Kubernetes) reads one endpoint instead of
// finding and scraping every pod itself.
package autoscale

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// routerStatus is the part of GET /router/status read here (see docs/router.md).
type routerStatus struct {
	Backends []struct {
		URL     string  `json:"url"`
		Healthy bool    `json:"healthy"`
		Running float64 `json:"running"`
		Waiting float64 `json:"waiting"`
		KVUsage float64 `json:"kv_usage"`
	} `json:"backends"`
}

// ObserveRouter returns an ObserveFunc that reads the healthy backends' load from the router at
// routerURL (http://host:port). A router that cannot be reached or answers badly is an error
// (the controller then holds).
func ObserveRouter(c *http.Client, routerURL string) ObserveFunc {
	if c == nil {
		c = http.DefaultClient
	}
	url := strings.TrimSuffix(routerURL, "/") + "/router/status"
	return func(ctx context.Context) ([]Sample, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		var st routerStatus
		if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st); err != nil {
			return nil, fmt.Errorf("GET %s: %w", url, err)
		}
		var s []Sample
		for _, b := range st.Backends {
			if b.Healthy {
				s = append(s, Sample{Replica: b.URL, Waiting: b.Waiting, Running: b.Running, KVUsage: b.KVUsage})
			}
		}
		return s, nil
	}
}
