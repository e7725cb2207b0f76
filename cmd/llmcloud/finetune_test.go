package main

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/train/nn"
)

// The trainer's network holding the base's dequantized weights gives the engine's logits.
func TestFinetuneBaseWeightsGiveEngineLogits(t *testing.T) {
	b, err := openBase("")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base, _, err := baseWeights(b)
	if err != nil {
		t.Fatal(err)
	}
	ids := b.Tok.Encode("Once upon a time, there was a little girl named Lily. User: What is 2 + 3?\nAssistant: 5\n", false, true)
	T := len(ids)
	net, err := nn.New(b.Model.Config, 1, T, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range net.Params() {
		copy(p.W, base[p.Name])
	}
	x := make([]int32, T)
	for i, id := range ids {
		x[i] = int32(id)
	}
	net.Forward(x, nil, 1, T)
	got := net.Logits()
	cache := b.Model.NewCache(T)
	V := b.Model.Config.Vocab
	for i, id := range ids {
		want, err := b.Model.Forward(cache, []int{id}, i, false)
		if err != nil {
			t.Fatal(err)
		}
		var maxd, maxv float64
		for j := range V {
			maxd = max(maxd, math.Abs(float64(got[i*V+j]-want[j])))
			maxv = max(maxv, math.Abs(float64(want[j])))
		}
		if maxd > 2e-2*maxv { // the engine multiplies Q8_0 weights by quantized activations
			t.Fatalf("position %d: trainer logits differ from the engine's by %g (largest %g)", i, maxd, maxv)
		}
	}
}
