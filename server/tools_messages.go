// Chat messages that carry tool calls and results, made ready for the chat template as vLLM
// makes them: a null content is the empty string, and an assistant message's tool-call
// arguments (JSON text on the wire) become objects, as tool-use templates expect.
package server

import (
	"fmt"

	"github.com/llmcloud/llmcloud/chattmpl"
)

// normalizeMessage prepares messages[i] (already known to be an object with a role).
func normalizeMessage(mm *chattmpl.Map, i int) *apiError {
	if c, ok := mm.Get("content"); !ok || c == nil {
		mm.Set("content", "")
	}
	tc, ok := mm.Get("tool_calls")
	if !ok || tc == nil {
		return nil
	}
	list, ok := tc.([]any)
	if !ok {
		return badRequest(fmt.Sprintf("messages[%d].tool_calls", i), "messages[%d].tool_calls must be a list", i)
	}
	for j, item := range list {
		call, ok := item.(*chattmpl.Map)
		if !ok {
			return badRequest(fmt.Sprintf("messages[%d].tool_calls[%d]", i, j), "messages[%d].tool_calls[%d] is not an object", i, j)
		}
		fn, _ := call.Get("function")
		fm, ok := fn.(*chattmpl.Map)
		if !ok {
			return badRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function", i, j), "messages[%d].tool_calls[%d].function must be an object", i, j)
		}
		if name, _ := fm.Get("name"); name == nil || name == "" {
			return badRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function.name", i, j), "messages[%d].tool_calls[%d].function.name is required", i, j)
		}
		if args, ok := fm.Get("arguments"); ok {
			if s, ok := args.(string); ok {
				if v, err := chattmpl.DecodeJSON([]byte(s)); err == nil {
					if _, obj := v.(*chattmpl.Map); obj {
						fm.Set("arguments", v)
					}
				}
			}
		}
	}
	return nil
}
