// The Responses API's hook for tool calling. Function tools need a tool-call parser (the
// tool-calling code in server/tools*.go, with --tool-call-parser); until it sets
// responsesTools, a Responses request with tools (and tool_choice other than "none") is a 400
// naming "tools", never answered with the calls left in the text.
package server

import (
	"encoding/json"

	"github.com/llmcloud/llmcloud/engine"
)

// respToolCall is one function call parsed out of generated text.
type respToolCall struct {
	Name      string
	Arguments string // JSON text
}

// respToolPlan is what tool calling gives a request that declares tools.
type respToolPlan struct {
	// constraint, when set, constrains the output (tool_choice "required" or a named
	// function); nil leaves it free ("auto").
	constraint func() engine.Constraint
	// parse splits the whole generated text into the assistant's content and its calls.
	parse func(text string) (content string, calls []respToolCall)
}

// responsesTools is set by the tool-calling code: given the tools and tool_choice in the
// chat API's shape ({type: "function", function: {...}}; tool_choice "auto", "required" or
// {type: "function", function: {name}}; never "none"), it returns the request's plan or a 400.
// TODO(issue 16): wire when the tool-call parsers (branch gtools) are merged.
var responsesTools func(st *state, tools, toolChoice json.RawMessage) (*respToolPlan, *apiError)
