package perf

import (
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
)

func TestThroughput(t *testing.T) {
	b, err := loader.Open(fixture.Path(t, "models", "stories260K", "stories260K.bin"), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	o := ThroughputOptions{NumPrompts: 8, InputLen: 20, OutputLen: 10, Temperature: 1, Engine: engine.DefaultOptions()}
	o.Engine.Scheduler.MaxNumBatchedTokens = 64
	r, err := Throughput(b.Model, b.Tok, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.NumRequests != 8 || r.TotalOutputTokens != 80 || r.TotalNumTokens != 8*30 || r.Steps < 10 ||
		r.RequestsPerSecond <= 0 || r.OutputTokensPerSecond <= 0 || r.TokensPerSecond < r.OutputTokensPerSecond ||
		r.DecodeSteps == 0 || r.MeanDecodeBatch > 8 {
		t.Errorf("result %+v", r)
	}
	if _, err := Throughput(b.Model, b.Tok, ThroughputOptions{NumPrompts: 1}); err == nil {
		t.Error("zero lengths accepted")
	}
	p := RandomPrompts(512, b.Tok, 3, 50, 1)
	for _, q := range p {
		for _, id := range q {
			if b.Tok.IsEOG(id) || id < 0 || id >= 512 {
				t.Fatalf("prompt token %d", id)
			}
		}
	}
}
