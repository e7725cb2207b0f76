// This file is a runnable example of the engine loop: add requests, then alternate Schedule,
// running the plan (here a stand-in for the model) and Update until everything finishes.

package engine_test

import (
	"fmt"

	"github.com/llmcloud/llmcloud/engine"
)

func Example() {
	cfg := engine.DefaultConfig()
	cfg.NumBlocks, cfg.BlockSizeTokens, cfg.MaxNumBatchedTokens, cfg.MaxModelLenTokens = 8, 4, 6, 32
	s, err := engine.NewScheduler(cfg)
	if err != nil {
		panic(err)
	}
	s.AddRequest(engine.SeqRequest{ID: 1, Prompt: []int{5, 6, 7, 8, 9}, MaxTokens: 2})
	s.AddRequest(engine.SeqRequest{ID: 2, Prompt: []int{1, 2}, MaxTokens: 3, StopTokenIDs: []int{0}})
	for s.HasUnfinished() {
		plan := s.Schedule()
		sampled := map[engine.SeqID]int{}
		for _, ss := range plan.Seqs {
			fmt.Printf("step %d: seq %d runs %v at %d, blocks %v\n", plan.Step, ss.ID, ss.Tokens, ss.StartPos, ss.BlockTable)
			if ss.NeedsLogits {
				sampled[ss.ID] = 40 + ss.StartPos + len(ss.Tokens) // the model's choice
			}
		}
		outs, _ := s.Update(plan, sampled)
		for _, o := range outs {
			fmt.Printf("  seq %d -> %d (%v)\n", o.ID, o.Token, o.Status)
		}
	}
	// Output:
	// step 0: seq 1 runs [5 6 7 8 9] at 0, blocks [0 1]
	// step 0: seq 2 runs [1] at 0, blocks [2]
	//   seq 1 -> 45 (running)
	// step 1: seq 1 runs [45] at 5, blocks [0 1]
	// step 1: seq 2 runs [2] at 1, blocks [2]
	//   seq 1 -> 46 (finished_length)
	//   seq 2 -> 42 (running)
	// step 2: seq 2 runs [42] at 2, blocks [2]
	//   seq 2 -> 43 (running)
	// step 3: seq 2 runs [43] at 3, blocks [2]
	//   seq 2 -> 44 (finished_length)
}
