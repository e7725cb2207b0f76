// The throughput check of issue 16's acceptance: 64 concurrent constrained requests against
// the same 64 unconstrained (same prompt, seeds, max_tokens, ignore_eos), decode tokens per
// second of each and their ratio (the goal: constrained >= 95% of unconstrained). The schema
// (an array of at least 100 records) cannot close within maxTokens, so both runs write exactly
// 64 x maxTokens tokens. Run:
//
//	go test ./internal/structcheck -run '^$' -bench ConstrainedThroughput -benchtime 4x
package structcheck

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/sample"
)

const rowsSchema = `{"type":"object","properties":{"rows":{"type":"array","minItems":100,"items":{"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":9999},"name":{"type":"string","maxLength":12},"ok":{"type":"boolean"}},"required":["id","name","ok"],"additionalProperties":false}}},"required":["rows"],"additionalProperties":false}`

func BenchmarkConstrainedThroughput(b *testing.B) {
	const conc, maxTokens = 64, 128
	models := []struct {
		name string
		path func(testing.TB) string
	}{
		{"rand3M", func(t testing.TB) string { return fixture.Path(t, "models", "rand3M", "rand3M-q8_0.gguf") }},
		{"qwen3-random", synthQwen},
	}
	for _, m := range models {
		b.Run(m.name, func(b *testing.B) {
			g, err := compileSchema(rowsSchema)
			if notYet(err) {
				b.Skipf("grammar engine not there yet: %v", err)
			}
			if err != nil {
				b.Fatal(err)
			}
			bun := openBundle(b, m.path(b))
			vocab := vocabOf(bun.Tok)
			e := newEngine(b, bun, conc)
			prompt := bun.Tok.Encode("Answer with JSON only: ", true, false)
			batch := func(constrained bool) float64 {
				reqs := make([]engine.Request, conc)
				for i := range reqs {
					reqs[i] = engine.Request{ID: fmt.Sprintf("%v-%d", constrained, i), Prompt: prompt,
						Params:    sample.Params{Temperature: 1, TopP: 1, Seed: uint64(i + 1)},
						MaxTokens: maxTokens, IgnoreEOS: true}
					if constrained {
						reqs[i].Constraint = g.NewMatcher(vocab)
					}
				}
				t0 := time.Now()
				res := runAll(b, e, reqs)
				wall := time.Since(t0)
				tokens := 0
				for _, r := range res {
					if r.err != nil || r.finish != engine.FinishLength || r.tokens != maxTokens {
						b.Fatalf("constrained=%v: finish %q after %d tokens (%v): %q", constrained, r.finish, r.tokens, r.err, clip(r.text, 200))
					}
					tokens += r.tokens
				}
				return float64(tokens) / wall.Seconds()
			}
			batch(false) // warm-up: first-touch of weights and KV pages
			var free, cons float64
			odd := false
			for b.Loop() { // alternate the order so that drift in the machine's load cancels
				if odd {
					cons += batch(true)
					free += batch(false)
				} else {
					free += batch(false)
					cons += batch(true)
				}
				odd = !odd
			}
			free, cons = free/float64(b.N), cons/float64(b.N)
			b.ReportMetric(free, "free-tok/s")
			b.ReportMetric(cons, "constrained-tok/s")
			b.ReportMetric(cons/free, "ratio")
			b.Logf("%d concurrent, %d tokens each: unconstrained %.0f tok/s, constrained %.0f tok/s, ratio %.3f",
				conc, maxTokens, free, cons, cons/free)
		})
	}
}
