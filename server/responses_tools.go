// The Responses API's function tools and reasoning, through the chat path's tool calling
// (tools.go: planTools, the forced-call grammar; tools_output.go: the reply parser with the
// --tool-call-parser and --reasoning-parser): a Responses request's tools and tool_choice are
// planned as the chat request they translate to, and the reply becomes output items: a
// reasoning item, a message, and one function_call item per call.
package server

import (
	"encoding/json"
	"strings"

	"github.com/llmcloud/llmcloud/api"
)

// planResponsesTools plans tools and tool_choice (already in the chat API's shape); errors
// name the Responses fields (tools[i].name rather than tools[i].function.name).
func (s *Server) planResponsesTools(tools, choice json.RawMessage, parallel *bool) (*toolPlan, *apiError) {
	plan, e := s.planTools(&api.ChatCompletionRequest{Tools: tools, ToolChoice: choice, ParallelToolCalls: parallel})
	if e != nil {
		e.param = strings.Replace(e.param, ".function.", ".", 1)
		e.msg = strings.ReplaceAll(e.msg, ".function.", ".")
	}
	return plan, e
}

// replyItems turns the whole reply into output items through the reply parser.
func (rc *responsesCall) replyItems(text, status string) []api.ResponseItem {
	msg := rc.reply.message(text)
	var out []api.ResponseItem
	if msg.ReasoningContent != nil {
		out = append(out, api.ResponseItem{Type: "reasoning", ID: "rs_" + rc.base, Status: status, Summary: []any{},
			Content: []api.OutputContent{{Type: "reasoning_text", Text: *msg.ReasoningContent}}})
	}
	if (msg.Content != nil && *msg.Content != "") || (len(msg.ToolCalls) == 0 && msg.ReasoningContent == nil) {
		content := ""
		if msg.Content != nil {
			content = *msg.Content
		}
		out = append(out, api.ResponseItem{Type: "message", ID: "msg_" + rc.base, Status: status, Role: "assistant",
			Content: []api.OutputContent{outputText(content)}})
	}
	for i, tc := range msg.ToolCalls {
		args := tc.Function.Arguments
		callID := tc.ID
		if callID == "" {
			callID = "call_" + rc.base + "_" + itoa(i)
		}
		out = append(out, api.ResponseItem{Type: "function_call", ID: "fc_" + rc.base + "_" + itoa(i), CallID: callID,
			Name: tc.Function.Name, Arguments: &args, Status: "completed"})
	}
	return out
}
