// Example of the n-gram proposer on a repetitive token sequence.
package spec_test

import (
	"fmt"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/spec"
)

func ExampleNGram() {
	g, err := spec.NewNGram(1, 3) // prompt_lookup_min 1, prompt_lookup_max 3
	if err != nil {
		panic(err)
	}
	// "the cat sat on the mat . the cat" as token ids: the last two tokens occurred at the
	// start, so the proposal is what followed them.
	reqs := []engine.ProposeRequest{{ID: 1, Tokens: []int{5, 9, 4, 2, 5, 7, 1, 5, 9}, K: 3}}
	if err := g.Propose(reqs); err != nil {
		panic(err)
	}
	fmt.Println(reqs[0].Draft, reqs[0].Probs == nil)
	// Output: [4 2 5] true
}
