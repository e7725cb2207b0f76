// The Responses API's input, made chat messages: a string (one user message) or a list of
// items (messages with string or input_text content, function_call and function_call_output
// items), with instructions first as a system message. The messages then go through the
// chat template like a chat completion's. Function tools become chat tools.
package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// responsesMessages converts input and instructions to chat messages (JSON for renderChat);
// item_reference items are looked up in items.
func responsesMessages(input json.RawMessage, instructions *string, items *itemStore) ([]byte, *apiError) {
	var msgs []map[string]any
	if instructions != nil && *instructions != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": *instructions})
	}
	input = bytes.TrimSpace(input)
	if !present(input) {
		return nil, badRequest("input", "input is required")
	}
	var s string
	if json.Unmarshal(input, &s) == nil {
		msgs = append(msgs, map[string]any{"role": "user", "content": s})
		return marshalMsgs(msgs)
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(input, &list); err != nil {
		return nil, badRequest("input", "input must be a string or a list of items")
	}
	if len(list) == 0 {
		return nil, badRequest("input", "input is an empty list")
	}
	for i, it := range list {
		if t := string(it["type"]); t == `"item_reference"` {
			var id string
			json.Unmarshal(it["id"], &id)
			ref, ok := items.get(id)
			if !ok {
				return nil, badRequest("input", "input[%d]: item_reference %q is not a stored item (items of responses made with store: false, or too long ago, are not kept)", i, id)
			}
			it = ref
		}
		str := func(key string) (string, *apiError) {
			var v string
			if raw, ok := it[key]; ok && present(raw) {
				if err := json.Unmarshal(raw, &v); err != nil {
					return "", badRequest("input", "input[%d].%s must be a string", i, key)
				}
			}
			return v, nil
		}
		typ, e := str("type")
		if e != nil {
			return nil, e
		}
		switch typ {
		case "", "message":
			role, e := str("role")
			if e != nil {
				return nil, e
			}
			switch role {
			case "user", "system", "assistant":
			case "developer":
				role = "system" // chat templates know system, not developer
			default:
				return nil, badRequest("input", "input[%d].role must be user, system, developer or assistant, got %q", i, role)
			}
			text, e := itemText(it["content"], fmt.Sprintf("input[%d].content", i))
			if e != nil {
				return nil, e
			}
			msgs = append(msgs, map[string]any{"role": role, "content": text})
		case "function_call":
			callID, e1 := str("call_id")
			name, e2 := str("name")
			args, e3 := str("arguments")
			if e := firstErr(e1, e2, e3); e != nil {
				return nil, e
			}
			if callID == "" || name == "" {
				return nil, badRequest("input", "input[%d]: a function_call item needs call_id and name", i)
			}
			call := map[string]any{"id": callID, "type": "function",
				"function": map[string]any{"name": name, "arguments": args}}
			// Calls right after an assistant message (or after other calls) join it, as one
			// assistant turn of the chat API holds its text and its tool_calls.
			if n := len(msgs); n > 0 && msgs[n-1]["role"] == "assistant" {
				calls, _ := msgs[n-1]["tool_calls"].([]any)
				msgs[n-1]["tool_calls"] = append(calls, call)
			} else {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call}})
			}
		case "function_call_output":
			callID, e := str("call_id")
			if e != nil {
				return nil, e
			}
			if callID == "" {
				return nil, badRequest("input", "input[%d]: a function_call_output item needs call_id", i)
			}
			out, e := itemText(it["output"], fmt.Sprintf("input[%d].output", i))
			if e != nil {
				return nil, e
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": callID, "content": out})
		case "reasoning":
			// Earlier reasoning is left out, as chat templates leave it out of earlier turns.
		default:
			return nil, badRequest("input", "input[%d]: items of type %q are not supported (message, function_call and function_call_output are)", i, typ)
		}
	}
	return marshalMsgs(msgs)
}

func marshalMsgs(msgs []map[string]any) ([]byte, *apiError) {
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil, badRequest("input", "input: %v", err)
	}
	return b, nil
}

func firstErr(es ...*apiError) *apiError {
	for _, e := range es {
		if e != nil {
			return e
		}
	}
	return nil
}

// itemText reads content: a string, or a list of text parts (input_text, output_text, text)
// joined by newlines.
func itemText(raw json.RawMessage, param string) (string, *apiError) {
	if !present(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("input", "%s must be a string or a list of text parts", param)
	}
	var texts []string
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
		default:
			return "", badRequest("input", "%s[%d]: only text parts are supported, got type %q", param, j, p.Type)
		}
		if p.Text == nil {
			return "", badRequest("input", "%s[%d].text must be a string", param, j)
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// responsesTool is a Responses API function tool.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// chatTools converts function tools to the chat API's shape ({type, function: {name,
// description, parameters}}); nil when there are none.
func chatTools(raw json.RawMessage) ([]byte, int, *apiError) {
	if !present(raw) {
		return nil, 0, nil
	}
	var tools []responsesTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, 0, badRequest("tools", "tools must be a list of function tools: %v", err)
	}
	if len(tools) == 0 {
		return nil, 0, nil
	}
	out := make([]map[string]any, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, 0, badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d].type: only function tools are supported, got %q", i, t.Type)
		}
		if t.Name == "" {
			return nil, 0, badRequest(fmt.Sprintf("tools[%d].name", i), "tools[%d].name is required", i)
		}
		fn := map[string]any{"name": t.Name}
		if t.Description != "" {
			fn["description"] = t.Description
		}
		if present(t.Parameters) {
			fn["parameters"] = t.Parameters
		}
		if t.Strict != nil {
			fn["strict"] = *t.Strict
		}
		out[i] = map[string]any{"type": "function", "function": fn}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, 0, badRequest("tools", "tools: %v", err)
	}
	return b, len(tools), nil
}

// chatToolChoice converts tool_choice to the chat API's shape ("none", "auto", "required" or
// {type: "function", function: {name}}); "" = absent.
func chatToolChoice(raw json.RawMessage) (json.RawMessage, string, *apiError) {
	if !present(raw) {
		return nil, "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none", "auto", "required":
			return raw, s, nil
		}
		return nil, "", badRequest("tool_choice", "tool_choice must be none, auto, required or {type: function, name}, got %q", s)
	}
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" || obj.Name == "" {
		return nil, "", badRequest("tool_choice", "tool_choice must be none, auto, required or {type: function, name}")
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": obj.Name}})
	return b, "function", nil
}
