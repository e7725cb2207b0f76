// This file holds the runnable examples of the distributed-training API: hooks around the
// units of a whole model, and a model split into two pipeline stages chained by hand.
package nn_test

import (
	"fmt"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

var exampleCfg = model.Config{Arch: "llama", Dim: 16, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 8,
	FFN: 32, Vocab: 32, CtxLen: 8, RopeTheta: 10000, NormEps: 1e-5, Tied: true}

// The hooks see every unit: forward 0..L+1 (and the tied embedding again for the output
// projection), backward from the head down, each unit's gradients ready as soon as final.
func ExampleNewWith() {
	var events []string
	m, err := nn.NewWith(exampleCfg, 1, 4, nil, nn.Options{
		BeforeUse: func(u int, backward bool) {
			if backward {
				events = append(events, fmt.Sprintf("b%d", u))
			} else {
				events = append(events, fmt.Sprintf("f%d", u))
			}
		},
		GradReady: func(u int) { events = append(events, fmt.Sprintf("r%d", u)) },
	})
	if err != nil {
		panic(err)
	}
	m.Init(1)
	m.Forward([]int32{1, 2, 3, 4}, []int32{2, 3, 4, 5}, 1, 4)
	m.Backward()
	fmt.Println(events)
	// Output: [f0 f1 f2 f3 f0 b3 b0 r3 b2 r2 b1 r1 r0]
}

// Two stages of a model, blocks [0, 1) and [1, 2), chained by hand give the whole model's
// loss; the last stage holds a copy of the tied embedding as unit 0.
func ExampleModel_StageForward() {
	tokens, targets := []int32{1, 2, 3, 4}, []int32{2, 3, 4, 5}
	whole, _ := nn.New(exampleCfg, 1, 4, nil)
	whole.Init(1)
	first, _ := nn.NewWith(exampleCfg, 1, 4, nil, nn.Options{EndBlock: 1})
	last, _ := nn.NewWith(exampleCfg, 1, 4, nil, nn.Options{FirstBlock: 1})
	first.Init(1)
	last.Init(1)
	act, _, err := first.StageForward(0, tokens, nil, nil, 1, 4)
	if err != nil {
		panic(err)
	}
	_, loss, err := last.StageForward(0, nil, targets, act, 1, 4)
	if err != nil {
		panic(err)
	}
	dact, _ := last.StageBackward(0, nil, 1)
	if _, err := first.StageBackward(0, dact, 1); err != nil {
		panic(err)
	}
	units, _ := nn.Units(exampleCfg, nn.Options{FirstBlock: 1})
	fmt.Println(loss == whole.Forward(tokens, targets, 1, 4), len(units[0].Params), len(units[1].Params))
	// Output: true 1 0
}
