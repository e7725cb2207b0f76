package cloud

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParsePrefixCache(t *testing.T) {
	text := `# HELP vllm:prefix_cache_queries_total Prompt tokens looked up in the prefix cache.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{model_name="a b}"} 300
vllm:prefix_cache_queries_total{model_name="c"} 100 1700000000000
vllm:prefix_cache_hits_total{model_name="a b}"} 150
vllm:prefix_cache_hits_total 50
vllm:prefix_cache_hits_total_created 12345
vllm:num_requests_running{model_name="a"} 7
`
	p, err := ParsePrefixCache(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	// The _created series is a different metric and must not be added.
	if p.QueriesTokens != 400 || p.HitsTokens != 200 || p.HitRate() != 0.5 {
		t.Fatalf("got %+v rate %g", p, p.HitRate())
	}
	for _, bad := range []string{"", "vllm:num_requests_running 1\n", "vllm:prefix_cache_hits_total{x=\"1\" 3\n", "vllm:prefix_cache_hits_total{} abc\n"} {
		if _, err := ParsePrefixCache(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if (PrefixCache{}).HitRate() != 0 {
		t.Error("hit rate of nothing")
	}
}

func TestScrapePrefixCache(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "vllm:prefix_cache_queries_total{model_name=\"m\"} 10\nvllm:prefix_cache_hits_total{model_name=\"m\"} 4")
	}))
	defer srv.Close()
	p, err := ScrapePrefixCache(context.Background(), srv.Client(), srv.URL+"/")
	if err != nil || p.HitsTokens != 4 || p.QueriesTokens != 10 {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := ScrapePrefixCache(context.Background(), srv.Client(), srv.URL+"/nope"); err == nil {
		t.Error("404 accepted")
	}
}
