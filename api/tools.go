// Tool-calling wire types: the tools a chat request declares, the calls a reply makes (whole
// and streamed in pieces), and the request message shape that carries them back.

package api

import "encoding/json"

// Tool is one entry of a chat request's tools.
type Tool struct {
	Type     string             `json:"type"` // "function"
	Function FunctionDefinition `json:"function"`
}

// FunctionDefinition declares a function the model may call.
type FunctionDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolCall is a call in an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and gives its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallDelta is a streamed piece of call Index: the first piece carries ID, Type and the
// name (with empty arguments), later ones only pieces of the arguments.
type ToolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function FunctionDelta `json:"function"`
}

// FunctionDelta is the function part of a ToolCallDelta.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Message is a chat request message as clients write one (the server reads messages as raw
// JSON and passes every key to the chat template; this type is for Go clients). Content is a
// string, a list of content parts, or null (an assistant message with only tool calls).
type Message struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name,omitempty"`
	ToolCalls        []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
}
