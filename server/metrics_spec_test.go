// Test of speculative decoding's metrics: a server whose engine speculates (with a tiny
// n-gram proposer) exports vLLM's four spec_decode counters equal to engine.Stats.Spec; one
// that does not, exports none.
package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
)

// ngramTest drafts the tokens that followed the latest earlier occurrence of the last token.
type ngramTest struct{}

func (ngramTest) Propose(reqs []engine.ProposeRequest) error {
	for i := range reqs {
		r := &reqs[i]
		n := len(r.Tokens)
		r.Draft = r.Draft[:0]
		for j := n - 2; j >= 0; j-- {
			if r.Tokens[j] == r.Tokens[n-1] {
				r.Draft = append(r.Draft, r.Tokens[j+1:min(n, j+1+r.K)]...)
				break
			}
		}
	}
	return nil
}

func (ngramTest) Forget(engine.SeqID) {}

func TestSpecDecodeMetrics(t *testing.T) {
	ts := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"}}, func(o *engine.Options) {
		o.Speculative = engine.SpecOptions{Proposer: ngramTest{}, NumTokens: 3}
	})
	c := client(ts)
	if _, err := c.Completions.New(context.Background(), cmplParams("Once upon a time, there was a little girl. Once upon a time, there was a little", 40)); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, ts.url)
	s := ts.eng.Stats().Spec
	if s.Drafts == 0 {
		t.Fatal("the engine never speculated")
	}
	label := `{model_name="stories"}`
	for series, want := range map[string]int64{
		"vllm:spec_decode_num_drafts_total" + label:          s.Drafts,
		"vllm:spec_decode_num_draft_tokens_total" + label:    s.DraftTokens,
		"vllm:spec_decode_num_accepted_tokens_total" + label: s.AcceptedTokens,
	} {
		if v := metricValue(t, m, series); v != float64(want) {
			t.Errorf("%s = %v, want %d", series, v, want)
		}
	}
	for pos, want := range s.AcceptedPerPos {
		series := fmt.Sprintf(`vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="stories",position="%d"}`, pos)
		if v := metricValue(t, m, series); v != float64(want) {
			t.Errorf("%s = %v, want %d", series, v, want)
		}
	}
	t.Logf("spec stats %+v", s)

	plain := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"}}, nil)
	if m := scrape(t, plain.url); strings.Contains(m, "spec_decode") {
		t.Error("spec_decode metrics without speculation")
	}
}
