package engine

import (
	"fmt"
	"testing"
)

// BenchmarkSchedulerStep times one scheduler step without a model — Schedule, then
// UpdateTokens with a placeholder token for every sequence that needs one — in a steady state
// of `seqs` live requests (256-token prompts, 64 output tokens, none sharing a prefix; a
// finished request is replaced before the next step), as the engine's step loop and the
// capacity simulator (package sim) drive it. One op is one step; allocs/op is per step.
// Prefix caching is on, so every filled block is hashed and committed.
func BenchmarkSchedulerStep(b *testing.B) {
	for _, seqs := range []int{1, 4, 32} {
		b.Run(fmt.Sprintf("seqs=%d", seqs), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.MaxModelLenTokens = 512
			s, err := NewScheduler(cfg)
			if err != nil {
				b.Fatal(err)
			}
			var next SeqID
			prompt := make([]int, 256)
			add := func() {
				for i := range prompt {
					prompt[i] = int(next)*len(prompt) + i // distinct prompts: no prefix hits
				}
				if _, err := s.AddRequest(SeqRequest{ID: next, Prompt: prompt, MaxTokens: 64, ArrivalTime: int64(next)}); err != nil {
					b.Fatal(err)
				}
				next++
			}
			sampled := map[SeqID][]int{}
			tok := []int{1}
			b.ReportAllocs()
			for b.Loop() {
				for len(s.seqs) < seqs {
					add()
				}
				plan := s.Schedule()
				clear(sampled)
				for i := range plan.Seqs {
					if plan.Seqs[i].NeedsLogits {
						sampled[plan.Seqs[i].ID] = tok
					}
				}
				if _, err := s.UpdateTokens(plan, sampled); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(next)/float64(b.N), "requests/op")
		})
	}
}
