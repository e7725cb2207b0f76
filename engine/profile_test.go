package engine

import (
	"bytes"
	"testing"

	"github.com/llmcloud/llmcloud/profile"
)

// TestEngineProfiler: a request run with a recorder set leaves schedule, step, forward and
// sample slices and the forward's op slices, in a well-formed trace; after SetProfiler(nil)
// nothing more is recorded.
func TestEngineProfiler(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	e := newEngine(t, b, nil)
	rec := profile.New()
	e.SetProfiler(rec)
	ids := b.Tok.Encode("Once upon a time", true, false)
	runAll(t, e, []Request{{ID: "a", Prompt: ids, MaxTokens: 8}})
	e.SetProfiler(nil)
	count := map[string]int{}
	total := 0
	for _, tr := range rec.Tracks() {
		for _, s := range tr.Slices() {
			count[tr.Name+"/"+s.Name]++
			total++
		}
	}
	for _, k := range []string{"scheduler/schedule", "engine steps/step", "engine steps/forward", "engine steps/sample", "worker 0 (caller)/matmul"} {
		if count[k] == 0 {
			t.Errorf("no %s slices: %v", k, count)
		}
	}
	if count["engine steps/step"] < 8 || count["engine steps/forward"] != count["engine steps/step"] {
		t.Errorf("%d steps, %d forwards for 8 tokens", count["engine steps/step"], count["engine steps/forward"])
	}
	var buf bytes.Buffer
	if err := rec.WriteTrace(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := profile.Validate(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	runAll(t, e, []Request{{ID: "b", Prompt: ids, MaxTokens: 4}})
	after := 0
	for _, tr := range rec.Tracks() {
		after += len(tr.Slices())
	}
	if after != total {
		t.Errorf("%d slices recorded with the profiler off", after-total)
	}
}
