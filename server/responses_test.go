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
		if int64(tok.Count) != r2.Usage.InputTokens || !strings.Contains(r2.RawJSON(), `"store":true`) {
			t.Fatalf("input tokens %d, tokenize %d; %s", r2.Usage.InputTokens, tok.Count, r2.RawJSON())
		}
	})
}

// item_reference: the items of an earlier response (stored unless store: false) stand in for
// the turns they were, as the Vercel AI SDK sends assistant messages back.
func TestResponsesItemReference(t *testing.T) {
	ts := chatServer(t, Options{})
	c := client(ts)
	ctx := context.Background()
	first, err := c.Responses.New(ctx, respParams("hello", 6))
	if err != nil {
		t.Fatal(err)
	}
	answer := first.Output[0]
	p := respParams("", 4)
	refs := []any{map[string]any{"role": "user", "content": "hello"}, map[string]any{"type": "item_reference", "id": answer.ID},
		map[string]any{"role": "user", "content": "more"}}
	second, err := c.Responses.New(ctx, p, option.WithJSONSet("input", refs))
	if err != nil {
		t.Fatal(err)
	}
	var tok api.TokenizeResponse
	msgs := []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"},
		{"role": "assistant", "content": first.OutputText()}, {"role": "user", "content": "more"}}
	if err := c.Post(ctx, "tokenize", map[string]any{"messages": msgs}, &tok, option.WithBaseURL(ts.url+"/")); err != nil {
		t.Fatal(err)
	}
	if int64(tok.Count) != second.Usage.InputTokens {
		t.Fatalf("input tokens %d, the same turns tokenized %d", second.Usage.InputTokens, tok.Count)
	}
	// store: false keeps nothing to refer to.
	unstored, err := c.Responses.New(ctx, respParams("hello", 2), option.WithJSONSet("store", false))
	if err != nil || !strings.Contains(unstored.RawJSON(), `"store":false`) {
		t.Fatalf("store false: %v %v", unstored, err)
	}
	_, err = c.Responses.New(ctx, p, option.WithJSONSet("input", []any{map[string]any{"type": "item_reference", "id": unstored.Output[0].ID}}))
	apiErr(t, err, 400, "input")
}

func TestResponsesErrors(t *testing.T) {
	ts := chatServer(t, Options{})
	c := client(ts)
	ctx := context.Background()
	for _, bc := range []badCase{
		{"previous_response_id", map[string]any{"previous_response_id": "resp_1"}, "previous_response_id", []string{"stores none"}, false},
		{"item_reference", map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": "msg_1"}}}, "input", []string{"not a stored item"}, false},
		{"image part", map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": "x"}}}}},
			"input", []string{"input_image"}, false},
		{"no input", map[string]any{"input": nil}, "input", []string{"required"}, false},
		{"text.format type", map[string]any{"text": map[string]any{"format": map[string]any{"type": "xml"}}}, "text.format.type", nil, false},
		{"json_schema without schema", map[string]any{"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "x"}}}, "text.format.schema", nil, false},
		{"invalid schema", map[string]any{"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "x", "schema": map[string]any{"type": 7}}}},
			"text.format.schema", nil, true},
		{"reasoning", map[string]any{"reasoning": map[string]any{"effort": "high"}}, "reasoning", nil, false},
		{"background", map[string]any{"background": true}, "background", nil, false},
		{"web search tool", map[string]any{"tools": []any{map[string]any{"type": "web_search"}}}, "tools[0].type", []string{"web_search"}, false},
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
	// As on chat: tool_choice "auto" needs --enable-auto-tool-choice and a parser; without a
	// tool_choice (or with "none") the tools reach the template and the reply is text.
	tools := []any{map[string]any{"type": "function", "name": "get_weather", "parameters": map[string]any{"type": "object"}}}
	_, err := c.Responses.New(ctx, respParams("hi", 4), option.WithJSONSet("tools", tools), option.WithJSONSet("tool_choice", "auto"))
	apiErr(t, err, 400, "tool_choice")
	_, err = c.Responses.New(ctx, respParams("hi", 4), option.WithJSONSet("tools", []any{map[string]any{"type": "function"}}))
	apiErr(t, err, 400, "tools[0].name")
	_, err = c.Responses.New(ctx, respParams("hi", 4), option.WithJSONSet("tools", tools),
		option.WithJSONSet("tool_choice", map[string]any{"type": "function", "name": "nope"}))
	apiErr(t, err, 400, "tool_choice")
	_, err = c.Responses.New(ctx, respParams("hi", 4), option.WithJSONSet("tools", tools), option.WithJSONSet("tool_choice", "required"),
		option.WithJSONSet("text", map[string]any{"format": map[string]any{"type": "json_object"}}))
	if e := apiErr(t, err, 400, "tool_choice"); !strings.Contains(e.Message, "text.format") {
		t.Fatalf("required + text.format: %s", e.Message)
	}
	for _, choice := range []any{nil, "none"} {
		r, err := c.Responses.New(ctx, respParams("hi", 4), option.WithJSONSet("tools", tools), option.WithJSONSet("tool_choice", choice))
		if err != nil || r.Output[0].Type != "message" {
			t.Fatalf("tool_choice %v: %+v %v", choice, r, err)
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

// Function tools on a Qwen3-shaped model with the real Qwen template: tool_choice "required"
// and a named function are forced by the grammar and come back as function_call items, whole
// and streamed (added, arguments deltas, arguments done, item done); function_call and
// function_call_output items render as the chat API's tool_calls and tool messages.
func TestResponsesTools(t *testing.T) {
	path, _ := qwen3Model(t, t.TempDir())
	ts := startServer(t, path, Options{ServedModelNames: []string{"qwen"}}, nil)
	c := client(ts)
	ctx := context.Background()
	weather := map[string]any{"type": "function", "name": "get_weather", "description": "Weather in a city.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 12}},
			"required": []string{"city"}, "additionalProperties": false}}
	clock := map[string]any{"type": "function", "name": "get_time",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string", "enum": []string{"UTC", "CET"}}},
			"required": []string{"tz"}, "additionalProperties": false}}
	p := responses.ResponseNewParams{Model: "qwen", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather and time?")},
		MaxOutputTokens: openai.Int(120), Temperature: openai.Float(1)}
	tools := option.WithJSONSet("tools", []any{weather, clock})
	r, err := c.Responses.New(ctx, p, tools, option.WithJSONSet("tool_choice", "required"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, it := range r.Output {
		if it.Type != "function_call" {
			continue
		}
		calls++
		var args map[string]any
		if (it.Name != "get_weather" && it.Name != "get_time") || json.Unmarshal([]byte(it.Arguments.OfString), &args) != nil ||
			!strings.HasPrefix(it.ID, "fc_") || it.CallID == "" {
			t.Fatalf("bad call %+v", it)
		}
	}
	if calls == 0 {
		t.Fatalf("no function_call items: %s", r.RawJSON())
	}

	sr := readResponseStream(t, c.Responses.NewStreaming(ctx, p, tools, option.WithJSONSet("tool_choice", map[string]any{"type": "function", "name": "get_time"})))
	var tz struct{ TZ string }
	if len(sr.items) != 1 || sr.items[0].Name != "get_time" || json.Unmarshal([]byte(sr.items[0].Arguments.OfString), &tz) != nil ||
		(tz.TZ != "UTC" && tz.TZ != "CET") {
		t.Fatalf("events %v, items %s", sr.types, sr.final.RawJSON())
	}

	// A call and its output fed back: the prompt is the chat API's for the same turns.
	items := []any{map[string]any{"role": "user", "content": "Weather in Oslo?"},
		map[string]any{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": `{"city":"Oslo"}`},
		map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "sunny"}}
	r, err = c.Responses.New(ctx, p, tools, option.WithJSONSet("input", items), option.WithJSONSet("tool_choice", "none"))
	if err != nil {
		t.Fatal(err)
	}
	chatTools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Weather in a city.",
		"parameters": weather["parameters"]}}, map[string]any{"type": "function", "function": map[string]any{"name": "get_time", "parameters": clock["parameters"]}}}
	msgs := []any{map[string]any{"role": "user", "content": "Weather in Oslo?"},
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Oslo"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "sunny"}}
	var tok api.TokenizeResponse
	if err := c.Post(ctx, "tokenize", map[string]any{"messages": msgs, "tools": chatTools}, &tok, option.WithBaseURL(ts.url+"/")); err != nil {
		t.Fatal(err)
	}
	text := ts.bund.Tok.Decode(tok.Tokens)
	if int64(tok.Count) != r.Usage.InputTokens || !strings.Contains(text, "<tool_response>\nsunny") || !strings.Contains(text, `"Oslo"`) {
		t.Fatalf("input tokens %d, tokenize %d: %q", r.Usage.InputTokens, tok.Count, text)
	}
}

func TestItemStoreBounded(t *testing.T) {
	var s itemStore
	for i := range maxStoredItems + 10 {
		s.put([]api.ResponseItem{{Type: "message", ID: "msg_" + itoa(i), Content: []api.OutputContent{outputText("x")}}})
	}
	if _, ok := s.get("msg_9"); ok {
		t.Fatal("the oldest items were kept")
	}
	if it, ok := s.get("msg_10"); !ok || string(it["role"]) != `"assistant"` || len(s.items) != maxStoredItems {
		t.Fatalf("kept %d items; msg_10: %v %v", len(s.items), it, ok)
	}
}
