package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/bench"
)

// TestBenchRecordsCachedTokens: a streamed completion's usage says how many prompt tokens the
// prefix cache supplied, and bench's client records them per request (bench serve's
// cached_tokens, which scripts/simulate-fidelity.sh gives the simulator): the first of two
// equal prompts misses, the second hits its full blocks.
func TestBenchRecordsCachedTokens(t *testing.T) {
	ts := startServer(t, storiesPath(t), Options{}, nil)
	c := &bench.Client{URL: ts.url + "/v1/completions", Model: "stories260K", IgnoreEOS: true, HTTP: bench.NewHTTPClient(time.Minute)}
	r := bench.Request{Prompt: strings.Repeat("Once upon a time there was a little girl. ", 5), OutputTokens: 3}
	var got []int
	for i := range 2 {
		o := c.Do(context.Background(), r, i)
		if !o.Success || !o.UsageTokens || o.OutputTokens != 3 {
			t.Fatalf("request %d: %+v", i, o)
		}
		got = append(got, o.CachedTokens)
	}
	if got[0] != 0 || got[1] < 16 || got[1]%16 != 0 {
		t.Errorf("cached prompt tokens %v: want 0, then the prompt's full 16-token blocks", got)
	}
}
