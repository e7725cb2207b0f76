package sim

import (
	"encoding/json"
	"testing"

	"github.com/llmcloud/llmcloud/bench"
	"github.com/llmcloud/llmcloud/defaultmodel"
)

// TestServerTokenCounts: with the model's tokenizer, a simulated request runs the tokens the
// server would: bench's prompt (the same seed gives the same text) carried through JSON and
// encoded with the BOS. The built-in model's random prompts of 448 tokens (bench's count) are
// longer in the server (invalid UTF-8 bytes become U+FFFD), and the simulation refuses those
// over max-model-len as the server does.
func TestServerTokenCounts(t *testing.T) {
	path, err := defaultmodel.Path()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := bench.LoadTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	d := Dataset{Name: "random", RandomInputLen: 448, RandomOutputLen: 32, Tokenizer: tok}
	reqs, err := Requests(d, 50, 2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	brs, err := bench.RandomRequests(tok, bench.RandomOptions{InputLen: 448, OutputLen: 32}, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	longer := 0
	for i, r := range reqs {
		b, _ := json.Marshal(brs[i].Prompt)
		var sent string
		if err := json.Unmarshal(b, &sent); err != nil {
			t.Fatal(err)
		}
		want := tok.Tok.Encode(sent, true, true)
		if len(r.IDs) != len(want) || int(r.PromptLen) != len(want) || r.IDs[0] != want[0] {
			t.Fatalf("request %d: %d ids (PromptLen %d), the server would run %d", i, len(r.IDs), r.PromptLen, len(want))
		}
		if int(r.PromptLen) > brs[i].PromptTokens+1 {
			longer++
		}
	}
	if longer == 0 {
		t.Fatal("no prompt is longer in the server than bench counts it: the test no longer exercises the JSON round trip")
	}
	p := testProfile()
	p.Engine.MaxModelLen = 512
	out, err := Simulate(Options{Profile: p, Replicas: 1}, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if over := int(r.PromptLen)+int(r.Output) > 512; over != (out.Errors[i] != "") {
			t.Errorf("request %d: %d+%d tokens, error %q", i, r.PromptLen, r.Output, out.Errors[i])
		}
	}
	t.Logf("%d of %d prompts longer in the server than bench's count + BOS", longer, len(reqs))
}
