// Test of the expert load statistics: a server on a random-weight Mixtral-shaped model (synth,
// 2 layers of 4 experts, 2 used) exports llmcloud:moe_expert_tokens_total per layer and expert
// after a completion, equal to engine.Stats.ExpertLoads, each layer's sum being experts-used
// times the tokens run; a dense model exports none.
package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/synth"
)

func TestExpertLoadMetrics(t *testing.T) {
	o := synth.Options{Arch: "llama", Dim: 32, Layers: 2, Heads: 2, FFN: 48, CtxLen: 128, Seed: 7, Name: "tiny-moe",
		Experts: 4, ExpertsUsed: 2, ChatTemplate: testTemplate}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "moe.gguf")
	if err := convert.Write(path, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, path, Options{ServedModelNames: []string{"stories"}}, nil)
	c := client(ts)
	if _, err := c.Completions.New(context.Background(), cmplParams("Once upon a time", 12)); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, ts.url)
	loads := ts.eng.Stats().ExpertLoads
	if len(loads) != 2 {
		t.Fatalf("expert loads of %d layers, want 2: %v", len(loads), loads)
	}
	tokens := ts.eng.Stats().BatchedTokens
	for l := range 2 {
		var sum uint64
		for e, n := range loads[l] {
			series := fmt.Sprintf(`llmcloud:moe_expert_tokens_total{expert="%d",layer="%d",model_name="stories"}`, e, l)
			if v := metricValue(t, m, series); v != float64(n) {
				t.Errorf("%s = %v, want %d", series, v, n)
			}
			sum += n
		}
		if sum != 2*uint64(tokens) {
			t.Errorf("layer %d routed %d rows to experts, want 2 x %d tokens", l, sum, tokens)
		}
		t.Logf("layer %d: %v", l, loads[l])
	}
	dense := startServer(t, synthModel(t, t.TempDir(), 64), Options{}, nil)
	if m := scrape(t, dense.url); strings.Contains(m, "moe_expert_tokens") {
		t.Error("expert metrics for a dense model")
	}
}
