// The live Responses stream with function tools, read with the official client: the events
// are numbered in order, each item is added, filled and done before the next is added, a
// call's arguments come in several deltas, and the final response lists the streamed items.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/toolcall"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// streamed is a Responses stream as read by readResponseStream.
type streamed struct {
	types []string
	items []responses.ResponseOutputItemUnion // from the output_item.done events
	args  map[int][]string                    // a function_call's argument deltas, by output_index
	final responses.Response
}

// readResponseStream reads a stream and checks the order of its events.
func readResponseStream(t *testing.T, st *ssestream.Stream[responses.ResponseStreamEventUnion]) streamed {
	t.Helper()
	var evs []responses.ResponseStreamEventUnion
	for st.Next() {
		evs = append(evs, st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return checkResponseEvents(t, evs)
}

// checkResponseEvents checks the order of a stream's events and that the final response
// lists the items the events built.
func checkResponseEvents(t *testing.T, evs []responses.ResponseStreamEventUnion) streamed {
	t.Helper()
	r := streamed{args: map[int][]string{}}
	open := -1 // the output_index of the item being written
	var openItem responses.ResponseOutputItemUnion
	var text, args string
	part := false
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("event %d: %s\nevents so far: %v", len(r.types), fmt.Sprintf(format, a...), r.types)
	}
	for _, ev := range evs {
		if ev.SequenceNumber != int64(len(r.types)) {
			fail("%s has sequence_number %d", ev.Type, ev.SequenceNumber)
		}
		n := len(r.types)
		r.types = append(r.types, ev.Type)
		inItem := open >= 0 && ev.OutputIndex == int64(open)
		switch ev.Type {
		case "response.created", "response.in_progress":
			if n > 1 || ev.Type != []string{"response.created", "response.in_progress"}[n] {
				fail("%s out of place", ev.Type)
			}
		case "response.output_item.added":
			if open >= 0 || ev.OutputIndex != int64(len(r.items)) || ev.Item.Status != "in_progress" {
				fail("added at %d with item %d open, %d done, status %q", ev.OutputIndex, open, len(r.items), ev.Item.Status)
			}
			open, openItem, text, args, part = int(ev.OutputIndex), ev.Item, "", "", false
		case "response.content_part.added":
			if !inItem || openItem.Type != "message" || ev.ItemID != openItem.ID || part {
				fail("content_part.added outside a message")
			}
			part = true
		case "response.output_text.delta":
			if !inItem || !part || ev.ItemID != openItem.ID {
				fail("output_text.delta outside a message's part")
			}
			text += ev.Delta
		case "response.output_text.done", "response.content_part.done":
			if !inItem || !part || ev.ItemID != openItem.ID || (ev.Type == "response.output_text.done" && ev.Text != text) ||
				(ev.Type == "response.content_part.done" && ev.Part.Text != text) {
				fail("%s: text %q, part %q, streamed %q", ev.Type, ev.Text, ev.Part.Text, text)
			}
		case "response.function_call_arguments.delta":
			if !inItem || openItem.Type != "function_call" || ev.ItemID != openItem.ID {
				fail("arguments delta outside a function_call")
			}
			args += ev.Delta
			r.args[open] = append(r.args[open], ev.Delta)
		case "response.function_call_arguments.done":
			if !inItem || ev.ItemID != openItem.ID || ev.Arguments != args {
				fail("arguments done %q, streamed %q", ev.Arguments, args)
			}
		case "response.output_item.done":
			it := ev.Item
			if !inItem || it.ID != openItem.ID || it.Type != openItem.Type || it.Status == "in_progress" ||
				(it.Type == "function_call" && (it.Arguments.OfString != args || it.CallID != openItem.CallID || it.Name != openItem.Name)) ||
				(it.Type == "message" && (len(it.Content) != 1 || it.Content[0].Text != text)) {
				fail("item done %s, added %s, text %q, arguments %q", it.RawJSON(), openItem.RawJSON(), text, args)
			}
			r.items = append(r.items, it)
			open = -1
		case "response.completed", "response.incomplete":
			if open >= 0 {
				fail("%s with item %d open", ev.Type, open)
			}
			r.final = ev.Response
		default:
			fail("unexpected event %s", ev.Type)
		}
	}
	if r.final.ID == "" || r.types[len(r.types)-1] != "response.completed" && r.types[len(r.types)-1] != "response.incomplete" {
		t.Fatalf("stream did not end with the response: %v", r.types)
	}
	if len(r.final.Output) != len(r.items) {
		t.Fatalf("final output %s, streamed %d items", r.final.RawJSON(), len(r.items))
	}
	for i, it := range r.final.Output {
		s := r.items[i]
		if it.ID != s.ID || it.Type != s.Type || it.CallID != s.CallID || it.Name != s.Name || it.Status != s.Status ||
			it.Arguments.OfString != s.Arguments.OfString || len(it.Content) != len(s.Content) ||
			(len(it.Content) > 0 && it.Content[0].Text != s.Content[0].Text) {
			t.Fatalf("final item %d %s, streamed %s", i, it.RawJSON(), s.RawJSON())
		}
	}
	return r
}

// A forced call (one: parallel_tool_calls false) on the random Qwen3 model, greedy: its
// arguments stream in pieces, and the final response has the same call.
func TestResponsesStreamToolsLive(t *testing.T) {
	path, _ := qwen3Model(t, t.TempDir())
	ts := startServer(t, path, Options{ServedModelNames: []string{"qwen"}}, nil)
	c := client(ts)
	ctx := context.Background()
	weather := map[string]any{"type": "function", "name": "get_weather", "description": "Weather in a city.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "minLength": 4, "maxLength": 12}},
			"required": []string{"city"}, "additionalProperties": false}}
	clock := map[string]any{"type": "function", "name": "get_time",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string", "enum": []string{"UTC", "CET"}}},
			"required": []string{"tz"}, "additionalProperties": false}}
	p := responses.ResponseNewParams{Model: "qwen", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather?")},
		MaxOutputTokens: openai.Int(120), Temperature: openai.Float(0), ParallelToolCalls: openai.Bool(false)}
	tools := option.WithJSONSet("tools", []any{weather, clock})
	for _, choice := range []any{map[string]any{"type": "function", "name": "get_weather"}, "required"} {
		t.Run(fmt.Sprint(choice), func(t *testing.T) {
			r := readResponseStream(t, c.Responses.NewStreaming(ctx, p, tools, option.WithJSONSet("tool_choice", choice)))
			if r.final.Status != "completed" || len(r.items) == 0 {
				t.Fatalf("response %s", r.final.RawJSON())
			}
			calls := 0
			for i, it := range r.items {
				if it.Type != "function_call" {
					continue
				}
				calls++
				var a map[string]any
				if !strings.HasPrefix(it.ID, "fc_") || !strings.HasPrefix(it.CallID, "call_") ||
					json.Unmarshal([]byte(it.Arguments.OfString), &a) != nil || it.Status != "completed" {
					t.Fatalf("call %s", it.RawJSON())
				}
				if strings.Join(r.args[i], "") != it.Arguments.OfString {
					t.Fatalf("deltas %q, arguments %q", r.args[i], it.Arguments.OfString)
				}
				if it.Name == "get_weather" && len(r.args[i]) < 3 {
					t.Fatalf("arguments %q in %d deltas, want them as generated", it.Arguments.OfString, len(r.args[i]))
				}
			}
			if calls != 1 || len(r.items) != 1 || (choice != "required" && r.items[0].Name != "get_weather") {
				t.Fatalf("items %s", r.final.RawJSON())
			}
		})
	}
}

// Text, then two calls, through the hermes parser in small pieces as an engine would give
// them: a message item first, its text closed before the first call opens, each call's
// arguments in deltas, and the final output as streamed. Whitespace between the items opens
// no message.
func TestResponsesLiveItems(t *testing.T) {
	p, err := toolcall.Lookup("hermes")
	if err != nil {
		t.Fatal(err)
	}
	reply := "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>"
	for _, cut := range []bool{false, true} {
		text := reply
		if cut {
			text = reply[:len(reply)-30]
		}
		rc := &responsesCall{id: "resp_b", base: "b", model: "m", req: &api.ResponsesRequest{}, g: &genRequest{},
			reply: &replyParser{tp: p, ts: p.NewStream()}, live: true}
		outs := make(chan choiceOutput, len(text))
		for i := 0; i < len(text); i += 3 {
			o := engine.Output{Text: text[i:min(i+3, len(text))]}
			if i+3 >= len(text) {
				o.Finished, o.FinishReason = true, engine.FinishStop
				if cut {
					o.FinishReason = engine.FinishLength
				}
			}
			outs <- choiceOutput{out: o}
		}
		close(outs)
		rec := httptest.NewRecorder()
		rc.stream(rec, outs)
		var evs []responses.ResponseStreamEventUnion
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var ev responses.ResponseStreamEventUnion
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
		}
		r := checkResponseEvents(t, evs)
		out := r.final.Output
		want := "completed"
		if cut {
			want = "incomplete"
		}
		if len(out) != 3 || out[0].Type != "message" || out[0].ID != "msg_b" || out[0].Content[0].Text != "Let me look.\n" ||
			out[0].Status != "completed" || out[1].Name != "get_weather" || out[1].ID != "fc_b_0" ||
			out[1].Arguments.OfString != `{"city": "Oslo"}` || out[1].Status != "completed" || len(r.args[1]) < 3 ||
			out[2].Name != "get_time" || out[2].ID != "fc_b_1" || out[2].Status != want || string(r.final.Status) != want {
			t.Fatalf("cut %v: output %s\nevents %v", cut, r.final.RawJSON(), r.types)
		}
	}
}
