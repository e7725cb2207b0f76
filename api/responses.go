// The Responses API (POST /v1/responses) as OpenAI and vLLM serve it: the request, the
// response object with its output items, and the named events of a streamed response.
package api

import "encoding/json"

// ResponsesRequest is the body of POST /v1/responses.
type ResponsesRequest struct {
	Model              string              `json:"model"`
	Input              json.RawMessage     `json:"input"` // string | []item
	Instructions       *string             `json:"instructions,omitempty"`
	MaxOutputTokens    *int                `json:"max_output_tokens,omitempty"`
	Temperature        *float64            `json:"temperature,omitempty"`
	TopP               *float64            `json:"top_p,omitempty"`
	Stream             bool                `json:"stream,omitempty"`
	Text               *ResponseTextConfig `json:"text,omitempty"`
	Tools              json.RawMessage     `json:"tools,omitempty"`       // [{type: "function", name, description, parameters, strict}]
	ToolChoice         json.RawMessage     `json:"tool_choice,omitempty"` // "none" | "auto" | "required" | {type: "function", name}
	ParallelToolCalls  *bool               `json:"parallel_tool_calls,omitempty"`
	PreviousResponseID *string             `json:"previous_response_id,omitempty"`
	Store              *bool               `json:"store,omitempty"`
	Metadata           map[string]string   `json:"metadata,omitempty"`
	User               string              `json:"user,omitempty"`
}

// ResponseTextConfig is the request's and the response's "text": the output format.
type ResponseTextConfig struct {
	Format ResponseTextFormat `json:"format"`
}

// ResponseTextFormat is {type: "text"} | {type: "json_object"} | {type: "json_schema", name,
// schema, strict, description}.
type ResponseTextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Response is the response object: the body of a non-streamed response and the "response" of
// the response.created, response.in_progress, response.completed and response.incomplete
// events.
type Response struct {
	ID                 string             `json:"id"`     // "resp_..."
	Object             string             `json:"object"` // "response"
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"` // "in_progress", "completed", "incomplete", "failed"
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []ResponseItem     `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	TopP               float64            `json:"top_p"`
	Text               ResponseTextConfig `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              json.RawMessage    `json:"tools"`
	Truncation         string             `json:"truncation"`
	Usage              *ResponseUsage     `json:"usage"`
	Metadata           map[string]string  `json:"metadata"`
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete ("max_output_tokens").
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseItem is one output item: a message (Role, Content of output_text parts), a
// function call (CallID, Name, Arguments) or reasoning (Summary, Content of reasoning_text
// parts).
type ResponseItem struct {
	Type      string          `json:"type"` // "message" | "function_call" | "reasoning"
	ID        string          `json:"id"`
	Status    string          `json:"status"` // "in_progress", "completed", "incomplete"
	Role      string          `json:"role,omitempty"`
	Content   []OutputContent `json:"content,omitzero"` // messages: never nil
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments *string         `json:"arguments,omitempty"`
	Summary   []any           `json:"summary,omitzero"` // reasoning: always []
}

// OutputContent is one part of an output message: {type: "output_text", text, annotations}.
type OutputContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations,omitzero"` // output_text: always []
	Logprobs    []any  `json:"logprobs,omitzero"`    // output_text: always []
}

// ResponseUsage counts a response's tokens.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails reports input tokens served from the prefix cache.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails reports reasoning tokens (none without a reasoning parser).
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// ResponseStreamEvent is one event of a streamed response; its Type is also the SSE event
// name. Which fields are set depends on the type.
type ResponseStreamEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	Response       *Response      `json:"response,omitempty"`
	OutputIndex    *int           `json:"output_index,omitempty"`
	ItemID         string         `json:"item_id,omitempty"`
	ContentIndex   *int           `json:"content_index,omitempty"`
	Item           *ResponseItem  `json:"item,omitempty"`
	Part           *OutputContent `json:"part,omitempty"`
	Delta          *string        `json:"delta,omitempty"`
	Text           *string        `json:"text,omitempty"`
	Name           string         `json:"name,omitempty"`
	Arguments      *string        `json:"arguments,omitempty"`
	Logprobs       []any          `json:"logprobs,omitzero"`
}
