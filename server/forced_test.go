// Jump forward over HTTP: a json_schema request on stories260K at temperature 0 and a
// tool_choice "required" request on a Qwen3-shaped model, with the grammar's forced tokens
// appended unsampled (the default) and with every token sampled (GrammarOptions.NoJumpForward):
// both give valid replies, streamed text equals the whole reply, and jump forward takes far
// fewer forward steps. The replies are not identical: forced text comes in the tokenizer's
// canonical tokens (`"order_status":` as a few long tokens) where a model sampling under the
// mask may spell it in other, shorter tokens, and the model then continues from a different
// token sequence (as with llguidance's and vLLM's jump forward).
package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const orderSchema = `{"type":"object","properties":{` +
	`"customer_name":{"type":"string","maxLength":10},` +
	`"order_status":{"enum":["pending_payment","shipped_to_customer","delivered_to_customer"]},` +
	`"is_priority_shipment":{"type":"boolean"},` +
	`"quantity_ordered":{"type":"integer","minimum":1,"maximum":9},` +
	`"shipping_address":{"type":"object","properties":{"street_name":{"type":"string","maxLength":8},"postal_code":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["street_name","postal_code"],"additionalProperties":false}},` +
	`"required":["customer_name","order_status","is_priority_shipment","quantity_ordered","shipping_address"],"additionalProperties":false}`

// stepsOf runs f and returns the engine steps and generated tokens it took.
func stepsOf(ts *testServer, f func()) (steps, tokens int64, d time.Duration) {
	s0 := ts.eng.Stats()
	t0 := time.Now()
	f()
	d = time.Since(t0)
	s1 := ts.eng.Stats()
	return s1.Steps - s0.Steps, s1.GenerationTokens - s0.GenerationTokens, d
}

func TestJumpForwardSchema(t *testing.T) {
	servers := map[bool]*testServer{}
	for _, off := range []bool{false, true} {
		servers[off] = startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"},
			Grammar: GrammarOptions{NoJumpForward: off}}, nil)
	}
	prompts := []string{"Once upon a time", "The little dog", "Lily wanted to", "One day, a bird"}
	texts := map[bool][]string{}
	for _, off := range []bool{false, true} {
		ts := servers[off]
		c := client(ts)
		steps, toks, d := stepsOf(ts, func() {
			for _, p := range prompts {
				r, err := c.Completions.New(context.Background(), cmplParams(p, 300), option.WithJSONSet("guided_json", json.RawMessage(orderSchema)))
				if err != nil {
					t.Fatal(err)
				}
				ch := r.Choices[0]
				var v map[string]any
				if err := json.Unmarshal([]byte(ch.Text), &v); err != nil || ch.FinishReason != "stop" {
					t.Errorf("jump forward off=%v: %q (%s): %v", off, ch.Text, ch.FinishReason, err)
				}
				if int64(len(texts[off])) == 0 {
					t.Logf("off=%v: %s (%d tokens)", off, ch.Text, r.Usage.CompletionTokens)
				}
				texts[off] = append(texts[off], ch.Text)
			}
		})
		t.Logf("jump forward off=%v: %d steps for %d tokens, %v (%.0f tokens/s)", off, steps, toks, d.Round(time.Millisecond), float64(toks)/d.Seconds())
		if !off && steps*2 > toks {
			t.Errorf("jump forward: %d steps for %d tokens", steps, toks)
		}
		if off && steps < toks {
			t.Errorf("no jump forward: %d steps for %d tokens", steps, toks)
		}
	}
	// Streamed with jump forward: the deltas add up to the whole reply.
	c := client(servers[false])
	st := c.Completions.NewStreaming(context.Background(), cmplParams(prompts[0], 300), option.WithJSONSet("guided_json", json.RawMessage(orderSchema)))
	text := ""
	for st.Next() {
		for _, ch := range st.Current().Choices {
			text += ch.Text
		}
	}
	if err := st.Err(); err != nil || text != texts[false][0] {
		t.Errorf("streamed %q (%v), whole %q", text, err, texts[false][0])
	}
}

func TestJumpForwardToolCall(t *testing.T) {
	path, _ := qwen3Model(t, t.TempDir())
	var tl openai.ChatCompletionToolUnionParam
	if err := json.Unmarshal([]byte(weatherTool), &tl); err != nil {
		t.Fatal(err)
	}
	replies := map[bool]string{} // logged: they differ (see the file comment)
	for _, off := range []bool{false, true} {
		ts := startServer(t, path, Options{ServedModelNames: []string{"qwen"}, Grammar: GrammarOptions{NoJumpForward: off}}, nil)
		c := client(ts)
		params := openai.ChatCompletionNewParams{Model: "qwen", Tools: []openai.ChatCompletionToolUnionParam{tl}, MaxTokens: openai.Int(60),
			Temperature: openai.Float(0), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}}
		var r *openai.ChatCompletion
		steps, toks, _ := stepsOf(ts, func() {
			var err error
			if r, err = c.Chat.Completions.New(context.Background(), params); err != nil {
				t.Fatal(err)
			}
		})
		m := r.Choices[0].Message
		if len(m.ToolCalls) == 0 || m.ToolCalls[0].Function.Name != "get_weather" {
			t.Fatalf("off=%v: not a call: %+v", off, r.Choices[0])
		}
		b, _ := json.Marshal(m.ToolCalls[0].Function)
		replies[off] = string(b) + " " + string(r.Choices[0].FinishReason)
		if r.Usage.CompletionTokens != toks {
			t.Errorf("usage %d completion tokens, engine generated %d", r.Usage.CompletionTokens, toks)
		}
		t.Logf("jump forward off=%v: %d steps for %d tokens: %s", off, steps, toks, replies[off])
		// `<tool_call>\n{"name": "get_weather", "arguments": {"city": "` is forced: at least
		// ten tokens of it come without a step of their own.
		if !off && steps+10 > toks {
			t.Errorf("jump forward: %d steps for %d tokens", steps, toks)
		}
	}
}
