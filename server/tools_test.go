// Tool calling and reasoning against the real server: request checks (400s naming the field),
// tool definitions and tool messages through a real Qwen3 template, streamed calls read by
// openai-go's accumulator, tool_choice "required" forced by the grammar, and reasoning split
// off replies.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/chattmpl"
	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/toolcall"
	"github.com/openai/openai-go/v3"
)

// qwen3Model writes a tiny random Qwen3-shaped model with the real Qwen tokenizer and
// Qwen3's chat template into dir.
func qwen3Model(t testing.TB, dir string) (path, tmpl string) {
	t.Helper()
	v, _, err := synth.LoadTokenizer(fixture.Path(t, "models", "qwen2-tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "chattmpl", "testdata", "templates", "qwen3.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	o := synth.Options{Arch: "qwen3", Dim: 32, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 16, FFN: 64, CtxLen: 2048,
		Tied: true, Seed: 3, Name: "tiny-qwen3", Tokenizer: v, ChatTemplate: string(src)}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "qwen3.gguf")
	if err := convert.Write(path, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	return path, string(src)
}

const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
	"parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"],
	"additionalProperties": false}}}`

func TestToolRequestErrors(t *testing.T) {
	ts := chatServer(t, Options{})
	msgs := `"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2`
	for _, c := range []struct{ body, param, msg string }{
		{`"tools": {"a": 1}`, "tools", "list"},
		{`"tools": [{"type": "retrieval"}]`, "tools[0].type", `"function"`},
		{`"tools": [` + weatherTool + `, {"type": "function", "function": {"description": "x"}}]`, "tools[1].function.name", "required"},
		{`"tools": [` + weatherTool + `, ` + weatherTool + `]`, "tools[1].function.name", "twice"},
		{`"tools": [` + weatherTool + `, {"type": "function", "function": {"name": "f", "parameters": [1, 2]}}]`,
			"tools[1].function.parameters", "must be an object"},
		{`"tools": [{"type": "function", "function": {"name": "f", "parameters": "object"}}]`,
			"tools[0].function.parameters", "must be an object"},
		{`"tools": [` + weatherTool + `], "tool_choice": "auto"`, "tool_choice", "--enable-auto-tool-choice"},
		{`"tools": [` + weatherTool + `], "tool_choice": "sometimes"`, "tool_choice", "sometimes"},
		{`"tools": [` + weatherTool + `], "tool_choice": {"type": "function", "function": {"name": "get_time"}}`, "tool_choice", "get_time"},
		{`"tools": [` + weatherTool + `], "tool_choice": {"type": "function"}`, "tool_choice", "tool_choice must be"},
		{`"tool_choice": "required"`, "tool_choice", "needs tools"},
		{`"functions": [{"name": "f"}]`, "functions", "use tools"},
		{`"messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}]`,
			"messages[0].tool_calls[0].function.name", "function.name"},
	} {
		body := "{" + msgs + ", " + c.body + "}"
		if strings.HasPrefix(c.body, `"messages"`) {
			body = "{" + c.body + ", \"max_tokens\": 2}"
		}
		status, _, resp := send(t, "POST", ts.url+"/v1/chat/completions", body, "")
		var e api.ErrorResponse
		json.Unmarshal([]byte(resp), &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != c.param || !strings.Contains(e.Error.Message, c.msg) {
			t.Errorf("%s: %d %s; want 400 naming %s (%q)", c.body, status, resp, c.param, c.msg)
		}
	}
	// "none" with tools, and tools with no tool_choice, are served (the tools reach the template)
	for _, extra := range []string{`"tools": [` + weatherTool + `], "tool_choice": "none"`, `"tools": [` + weatherTool + `]`} {
		status, _, resp := send(t, "POST", ts.url+"/v1/chat/completions", "{"+msgs+", "+extra+"}", "")
		if status != 200 || strings.Contains(resp, "tool_calls") {
			t.Errorf("%s: %d %s", extra, status, resp)
		}
	}
	// a schema the compiler refuses (once it is there)
	if _, err := toolcall.ParamsIR(json.RawMessage(`{"type": "object"}`)); err == nil {
		status, _, resp := send(t, "POST", ts.url+"/v1/chat/completions",
			"{"+msgs+`, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "nonsense"}}}}}]}`, "")
		if status != 400 || !strings.Contains(resp, "tools[0].function.parameters") {
			t.Errorf("unknown type in a schema: %d %s", status, resp)
		}
	}
}

// Tool definitions, an assistant message with tool calls (arguments as JSON text, content
// null) and a tool result go through Qwen3's template as Qwen writes them.
func TestToolMessagesThroughTemplate(t *testing.T) {
	path, tmpl := qwen3Model(t, t.TempDir())
	ts := startServer(t, path, Options{ServedModelNames: []string{"qwen"}}, nil)
	msgs := `[{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
			"function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "22°C, sunny"}]`
	status, _, resp := send(t, "POST", ts.url+"/tokenize", `{"messages": `+msgs+`}`, "")
	if status != 200 {
		t.Fatalf("%d %s", status, resp)
	}
	var tok api.TokenizeResponse
	json.Unmarshal([]byte(resp), &tok)
	text := ts.bund.Tok.Decode(tok.Tokens) // <|im_start|> and <|im_end|> are control tokens: not in the text
	for _, want := range []string{
		"user\nWeather in Paris?",
		"assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		"user\n<tool_response>\n22°C, sunny\n</tool_response>",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered prompt lacks %q:\n%s", want, text)
		}
	}

	// with tools: the prompt is the template's rendering of both (checked against chattmpl)
	body := `{"messages": ` + msgs + `, "tools": [` + weatherTool + `], "max_tokens": 1}`
	status, _, resp = send(t, "POST", ts.url+"/v1/chat/completions", body, "")
	if status != 200 {
		t.Fatalf("%d %s", status, resp)
	}
	var cr api.ChatCompletionResponse
	json.Unmarshal([]byte(resp), &cr)
	mv, _ := chattmpl.DecodeJSON([]byte(msgs))
	list := mv.([]any)
	for i, m := range list {
		normalizeMessage(m.(*chattmpl.Map), i)
	}
	tv, _ := chattmpl.DecodeJSON([]byte("[" + weatherTool + "]"))
	want, err := chattmpl.Apply(tmpl, list, chattmpl.Options{AddGenerationPrompt: true, Tools: tv.([]any), EOSToken: "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want, `"name": "get_weather", "description": "Weather in a city."`) {
		t.Fatalf("the template did not list the tool:\n%s", want)
	}
	if n := len(ts.bund.Tok.Encode(want, false, true)); cr.Usage == nil || cr.Usage.PromptTokens != n {
		t.Fatalf("prompt tokens %+v, want %d for\n%s", cr.Usage, n, want)
	}
	// /tokenize renders the tools too (vLLM's field)
	status, _, resp = send(t, "POST", ts.url+"/tokenize", `{"messages": `+msgs+`, "tools": [`+weatherTool+`]}`, "")
	json.Unmarshal([]byte(resp), &tok)
	if status != 200 || tok.Count != cr.Usage.PromptTokens {
		t.Fatalf("/tokenize with tools: %d %d tokens, chat prompt %d", status, tok.Count, cr.Usage.PromptTokens)
	}
}

// The streamed deltas of a reply with calls, as the handler writes them, read by openai-go's
// ChatCompletionAccumulator into the same message a non-streamed response has.
func TestStreamedToolCallsAccumulate(t *testing.T) {
	s := New(Options{})
	plan := &toolPlan{}
	plan.parser, _ = toolcall.Lookup("hermes")
	reply := "I'll check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Europe/Zurich\", \"fmt\": [\"h\", 24]}}\n</tool_call>"
	whole := s.newReplyParser(plan).message(reply)
	if len(whole.ToolCalls) != 2 || whole.Content == nil || *whole.Content != "I'll check both.\n" {
		t.Fatalf("whole: %+v", whole)
	}
	for _, step := range []int{1, 3, 7} {
		rp := s.newReplyParser(plan)
		var acc openai.ChatCompletionAccumulator
		add := func(d api.ChatDelta, fin *string) {
			b, _ := json.Marshal(api.ChatCompletionChunk{ID: "x", Object: "chat.completion.chunk", Model: "m",
				Choices: []api.ChatChunkChoice{{Delta: d, FinishReason: fin}}})
			var ch openai.ChatCompletionChunk
			if err := json.Unmarshal(b, &ch); err != nil {
				t.Fatal(err)
			}
			if !acc.AddChunk(ch) {
				t.Fatalf("accumulator refused %s", b)
			}
		}
		add(api.ChatDelta{Role: "assistant"}, nil)
		runes := []rune(reply) // the engine's text never splits a UTF-8 sequence
		for i := 0; i < len(runes); i += step {
			end := min(i+step, len(runes))
			for _, d := range rp.feed(string(runes[i:end]), end == len(runes)) {
				add(d, nil)
			}
		}
		fin := rp.finishReason("stop")
		add(api.ChatDelta{}, &fin)
		m := acc.Choices[0].Message
		if m.Content != *whole.Content || len(m.ToolCalls) != 2 || acc.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("step %d: %+v", step, acc.Choices[0])
		}
		for i, tc := range m.ToolCalls {
			w := whole.ToolCalls[i]
			if tc.Function.Name != w.Function.Name || tc.Function.Arguments != w.Function.Arguments || !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" {
				t.Fatalf("step %d call %d: %+v, want %+v", step, i, tc, w)
			}
		}
	}
}

// tool_choice "required" and a named function: every sampled reply of a random model is a
// well-formed call of a declared tool (the grammar allows nothing else).
func TestToolChoiceForced(t *testing.T) {
	path, _ := qwen3Model(t, t.TempDir())
	ts := startServer(t, path, Options{ServedModelNames: []string{"qwen"}}, nil)
	c := client(ts)
	ctx := context.Background()
	var tools []openai.ChatCompletionToolUnionParam
	for _, raw := range []string{weatherTool, `{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string", "enum": ["UTC", "CET"]}}, "required": ["tz"], "additionalProperties": false}}}`} {
		var tl openai.ChatCompletionToolUnionParam
		if err := json.Unmarshal([]byte(raw), &tl); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	params := openai.ChatCompletionNewParams{Model: "qwen", Tools: tools, MaxTokens: openai.Int(200), N: openai.Int(10),
		Temperature: openai.Float(1), Seed: openai.Int(1),
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather and the time?")},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}}
	r, err := c.Chat.Completions.New(ctx, params)
	var ae *openai.Error
	if errors.As(err, &ae) && strings.Contains(ae.Message, "not implemented yet") {
		t.Skip("the grammar engine (grammar.JSONSchema / grammar.Compile) is not merged yet: " + ae.Message)
	}
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"get_weather": true, "get_time": true}
	for _, ch := range r.Choices {
		// a random model may go on calling until max_tokens ("length"): its complete calls stay
		if (ch.FinishReason != "tool_calls" && ch.FinishReason != "length") || len(ch.Message.ToolCalls) == 0 ||
			(ch.Message.Content != "" && strings.TrimSpace(ch.Message.Content) != "") {
			t.Fatalf("not a call: %+v", ch)
		}
		for _, tc := range ch.Message.ToolCalls {
			var args map[string]any
			if !known[tc.Function.Name] || json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil {
				t.Fatalf("bad call %+v", tc)
			}
		}
	}
	// named, streamed: exactly one call of that function, accumulated by openai-go
	params.N = openai.Int(1)
	params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
		Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"}}}
	st := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	calls := acc.Choices[0].Message.ToolCalls
	var args struct{ TZ string }
	if len(calls) != 1 || calls[0].Function.Name != "get_time" || json.Unmarshal([]byte(calls[0].Function.Arguments), &args) != nil ||
		(args.TZ != "UTC" && args.TZ != "CET") {
		t.Fatalf("named call: %+v", acc.Choices[0].Message)
	}
}

// --reasoning-parser deepseek_r1: the reply starts inside the reasoning, so a random model's
// reply (which never writes </think>) is all reasoning_content, streamed or not, and the
// same text the server gives without the parser.
func TestReasoningSplit(t *testing.T) {
	path, _ := qwen3Model(t, t.TempDir())
	plain := startServer(t, path, Options{ServedModelNames: []string{"qwen"}}, nil)
	reasoned := startServer(t, path, Options{ServedModelNames: []string{"qwen"}, ReasoningParser: "deepseek_r1"}, nil)
	body := `{"messages": [{"role": "user", "content": "Think."}], "max_tokens": 12, "temperature": 0}`
	var want, got struct {
		Choices []struct {
			Message struct {
				Content          *string `json:"content"`
				ReasoningContent *string `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
	}
	for _, x := range []struct {
		ts  *testServer
		out any
	}{{plain, &want}, {reasoned, &got}} {
		status, _, resp := send(t, "POST", x.ts.url+"/v1/chat/completions", body, "")
		if status != 200 || json.Unmarshal([]byte(resp), x.out) != nil {
			t.Fatalf("%d %s", status, resp)
		}
	}
	w, g := want.Choices[0].Message, got.Choices[0].Message
	if w.Content == nil || *w.Content == "" || w.ReasoningContent != nil {
		t.Fatalf("without the parser: %+v", w)
	}
	wantReasoning := strings.Replace(*w.Content, "<think>", "", 1)
	if g.Content != nil || g.ReasoningContent == nil || *g.ReasoningContent != strings.TrimLeft(wantReasoning, " \n") && *g.ReasoningContent != wantReasoning {
		t.Fatalf("with deepseek_r1: %+v, want reasoning %q", g, *w.Content)
	}
	// streamed: reasoning deltas only, adding up to the same text
	status, _, resp := send(t, "POST", reasoned.url+"/v1/chat/completions", strings.TrimSuffix(body, "}")+`, "stream": true}`, "")
	if status != 200 {
		t.Fatalf("%d %s", status, resp)
	}
	var rs, cs string
	for _, line := range strings.Split(resp, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch api.ChatCompletionChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			rs += c.Delta.ReasoningContent
			cs += c.Delta.Content
		}
	}
	if rs != *g.ReasoningContent || cs != "" {
		t.Fatalf("streamed reasoning %q content %q, want %q", rs, cs, *g.ReasoningContent)
	}
}

// Llama 3.1's tool template writes a call's arguments with tojson: arguments sent as JSON text
// (as OpenAI clients send them) must reach it as an object, or they come out quoted twice.
func TestToolMessagesLlama31(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "chattmpl", "testdata", "templates", "llama3_1_tools.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	ts := chatServer(t, Options{ChatTemplate: string(src)})
	msgs := `[{"role": "user", "content": "look up cats"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
			"function": {"name": "lookup", "arguments": "{\"q\": \"cats\", \"n\": 2}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "content": "Cats are mammals."}]`
	status, _, resp := send(t, "POST", ts.url+"/tokenize", `{"messages": `+msgs+`, "add_generation_prompt": true}`, "")
	if status != 200 {
		t.Fatalf("%d %s", status, resp)
	}
	var tok api.TokenizeResponse
	json.Unmarshal([]byte(resp), &tok)
	text := ts.bund.Tok.Decode(tok.Tokens)
	for _, want := range []string{
		"<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"lookup\", \"parameters\": {\"q\": \"cats\", \"n\": 2}}<|eot_id|>",
		"<|start_header_id|>ipython<|end_header_id|>\n\n",
		"Cats are mammals.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered prompt lacks %q:\n%s", want, text)
		}
	}
}
