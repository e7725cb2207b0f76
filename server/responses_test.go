// The Responses API with the official client: text and json_schema, whole and streamed (the
// events in OpenAI's order, numbered), input items through the chat template, and the 400s.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

func respParams(input string, maxTokens int64) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "tiny", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		Instructions: openai.String("be brief"), MaxOutputTokens: openai.Int(maxTokens), Temperature: openai.Float(0)}
}

func TestResponsesText(t *testing.T) {
	ts := chatServer(t, Options{})
	c := client(ts)
	ctx := context.Background()
	r, err := c.Responses.New(ctx, respParams("hello", 12))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Model != "tiny" || r.CreatedAt == 0 ||
		len(r.Output) != 1 || r.Output[0].Type != "message" || r.Output[0].Role != "assistant" ||
		r.Output[0].Content[0].Type != "output_text" || r.Usage.OutputTokens == 0 ||
		r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens || r.Instructions.OfString != "be brief" {
		t.Fatalf("response: %+v", r)
	}
	if (r.Status == "incomplete") != (r.Usage.OutputTokens == 12) || (r.Status == "incomplete" && r.IncompleteDetails.Reason != "max_output_tokens") {
		t.Fatalf("status %s with %d output tokens, details %+v", r.Status, r.Usage.OutputTokens, r.IncompleteDetails)
	}
	// The same conversation as a chat completion: same prompt, same greedy text.
	cr, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", MaxCompletionTokens: openai.Int(12),
		Temperature: openai.Float(0), Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if r.OutputText() != cr.Choices[0].Message.Content || r.Usage.InputTokens != cr.Usage.PromptTokens {
		t.Fatalf("responses %q (%d input tokens), chat %q (%d)", r.OutputText(), r.Usage.InputTokens,
			cr.Choices[0].Message.Content, cr.Usage.PromptTokens)
	}

	t.Run("stream", func(t *testing.T) {
		st := c.Responses.NewStreaming(ctx, respParams("hello", 12))
		var types []string
		var text string
		var final responses.Response
		for st.Next() {
			ev := st.Current()
			if ev.SequenceNumber != int64(len(types)) {
				t.Fatalf("event %d (%s) has sequence_number %d", len(types), ev.Type, ev.SequenceNumber)
			}
			types = append(types, ev.Type)
			switch ev.Type {
			case "response.output_text.delta":
				if ev.ItemID != r.Output[0].ID[:4]+ev.ItemID[4:] || !strings.HasPrefix(ev.ItemID, "msg_") {
					t.Fatalf("delta item_id %q", ev.ItemID)
				}
				text += ev.Delta
			case "response.output_text.done":
				if ev.Text != r.OutputText() {
					t.Fatalf("output_text.done %q, want %q", ev.Text, r.OutputText())
				}
			case "response.completed", "response.incomplete":
				final = ev.Response
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		end := "response.completed"
		if r.Status == "incomplete" {
			end = "response.incomplete"
		}
		want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
		var deltas int
		for _, ty := range types[4:] {
			if ty != "response.output_text.delta" {
				break
			}
			deltas++
		}
		for range deltas {
			want = append(want, "response.output_text.delta")
		}
		want = append(want, "response.output_text.done", "response.content_part.done", "response.output_item.done", end)
		if strings.Join(types, " ") != strings.Join(want, " ") || deltas < 2 {
			t.Fatalf("events:\n%v\nwant\n%v", types, want)
		}
		if text != r.OutputText() || final.OutputText() != text || final.Status != r.Status || final.Usage.OutputTokens != r.Usage.OutputTokens {
			t.Fatalf("streamed %q, final %+v; want %q", text, final, r.OutputText())
		}
	})

	t.Run("SSE event names", func(t *testing.T) {
		body := `{"model":"tiny","input":"hello","max_output_tokens":4,"stream":true}`
		resp, err := http.Post(ts.url+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		rd := api.NewSSEReader(resp.Body)
		n := 0
		for {
			name, data, err := rd.NextEvent()
			if err != nil {
				break
			}
			var ev struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(data, &ev) != nil || ev.Type != name {
				t.Fatalf("event %q carries %s", name, data)
			}
			n++
		}
		if n < 8 {
			t.Fatalf("%d events", n)
		}
	})

	t.Run("input items", func(t *testing.T) {
		fc := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
		fc.OfFunctionCallOutput.CallID = openai.String("call_1")
		p := respParams("", 4)
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("hello", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("hi there", responses.EasyInputMessageRoleAssistant),
			responses.ResponseInputItemParamOfFunctionCall(`{"city":"Oslo"}`, "call_1", "get_weather"),
			fc,
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				{OfInputText: &responses.ResponseInputTextParam{Text: "and now?"}}}, responses.EasyInputMessageRoleDeveloper),
		}}
		p.Store = openai.Bool(true)
		r2, err := c.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		// The template prints every message's content: the tool result and the developer's
		// text (as a system message) are in the prompt.
		var tok api.TokenizeResponse
		msgs := []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"},
			{"role": "assistant", "content": "hi there"}, {"role": "tool", "content": "sunny"}, {"role": "system", "content": "and now?"}}
		if err := c.Post(ctx, "tokenize", map[string]any{"messages": msgs}, &tok, option.WithBaseURL(ts.url+"/")); err != nil {
			t.Fatal(err)
		}
		if int64(tok.Count) != r2.Usage.InputTokens || !strings.Contains(r2.RawJSON(), `"store":false`) {
			t.Fatalf("input tokens %d, tokenize %d; %s", r2.Usage.InputTokens, tok.Count, r2.RawJSON())
		}
	})
}

func TestResponsesErrors(t *testing.T) {
	ts := chatServer(t, Options{})
	c := client(ts)
	ctx := context.Background()
	for _, bc := range []badCase{
		{"previous_response_id", map[string]any{"previous_response_id": "resp_1"}, "previous_response_id", []string{"stores none"}, false},
		{"item_reference", map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": "msg_1"}}}, "input", []string{"item_reference"}, false},
		{"image part", map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": "x"}}}}},
			"input", []string{"input_image"}, false},
		{"no input", map[string]any{"input": nil}, "input", []string{"required"}, false},
		{"text.format type", map[string]any{"text": map[string]any{"format": map[string]any{"type": "xml"}}}, "text.format.type", nil, false},
		{"json_schema without schema", map[string]any{"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "x"}}}, "text.format.schema", nil, false},
		{"invalid schema", map[string]any{"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "x", "schema": map[string]any{"type": 7}}}},
			"text.format.schema", nil, true},
		{"reasoning", map[string]any{"reasoning": map[string]any{"effort": "high"}}, "reasoning", nil, false},
		{"background", map[string]any{"background": true}, "background", nil, false},
		{"web search tool", map[string]any{"tools": []any{map[string]any{"type": "web_search"}}}, "tools", []string{"web_search"}, false},
		{"tool_choice without tools", map[string]any{"tool_choice": "required"}, "tool_choice", nil, false},
		{"max_output_tokens", map[string]any{"max_output_tokens": 0}, "max_output_tokens", nil, false},
	} {
		t.Run(bc.name, func(t *testing.T) {
			postBad(t, func(opts ...option.RequestOption) error {
				_, err := c.Responses.New(ctx, respParams("hi", 4), opts...)
				return err
			}, bc)
		})
	}
	if responsesTools == nil {
		tools := []any{map[string]any{"type": "function", "name": "get_weather", "parameters": map[string]any{"type": "object"}}}
		_, err := c.Responses.New(ctx, respParams("hi", 4), option.WithJSONSet("tools", tools))
		apiErr(t, err, 400, "tools")
		// tool_choice "none" keeps the tools out: a plain text answer.
		if _, err := c.Responses.New(ctx, respParams("hi", 4), option.WithJSONSet("tools", tools), option.WithJSONSet("tool_choice", "none")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResponsesJSONSchema(t *testing.T) {
	ts := chatServer(t, Options{})
	c := client(ts)
	ctx := context.Background()
	var schema map[string]any
	json.Unmarshal([]byte(personSchema), &schema)
	p := respParams("Describe a person.", 120)
	p.Temperature = openai.Float(1)
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
		OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "person", Schema: schema, Strict: openai.Bool(true)}}}
	r, err := c.Responses.New(ctx, p)
	skipIfStub(t, err)
	needConstraints(t, ts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "completed" || r.Text.Format.Type != "json_schema" {
		t.Fatalf("response %+v", r)
	}
	if err := checkPerson(r.OutputText()); err != nil {
		t.Fatalf("%q: %v", r.OutputText(), err)
	}
	st := c.Responses.NewStreaming(ctx, p)
	var text bytes.Buffer
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if err := checkPerson(text.String()); err != nil {
		t.Fatalf("streamed %q: %v", text.String(), err)
	}
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &openai.ResponseFormatJSONObjectParam{}}}
	p.MaxOutputTokens = openai.Int(60)
	r, err = c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status == "completed" && checkObject(r.OutputText()) != nil || !strings.HasPrefix(r.OutputText(), "{") {
		t.Fatalf("json_object: %q (%s)", r.OutputText(), r.Status)
	}
}
