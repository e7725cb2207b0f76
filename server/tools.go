// Tool calling on /v1/chat/completions: the request's tools and tool_choice checked before
// any compute, and turned into a plan: which parser reads the reply, and for tool_choice
// "required" or a named function the grammar that makes the reply a well-formed call.
//
// tool_choice, as vLLM reads it:
//   - absent: "auto" when the server runs with --enable-auto-tool-choice and a
//     --tool-call-parser, else the tools only reach the template and the reply is content
//     (vLLM refuses such requests; llmcloud keeps serving them as it always did);
//   - "none": the tools still reach the template, the reply is content;
//   - "auto": needs --enable-auto-tool-choice and --tool-call-parser (400 otherwise); the
//     reply is parsed for calls;
//   - "required" / {"type": "function", "function": {"name": X}}: the grammar allows only
//     calls (one or more of any tool; exactly one of X), written in the --tool-call-parser's
//     format, or in hermes's <tool_call> format when the server has none.
package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/grammar"
	"github.com/llmcloud/llmcloud/toolcall"
)

// toolPlan is what a chat request's tools and tool_choice ask for.
type toolPlan struct {
	parser *toolcall.Parser // reads the reply's calls (nil: the reply is all content)
	ir     *grammar.IR      // required / named: the grammar of the reply
	single bool             // parallel_tool_calls false: at most one call
}

// planTools checks tools, tool_choice and parallel_tool_calls.
func (s *Server) planTools(req *api.ChatCompletionRequest) (*toolPlan, *apiError) {
	plan := &toolPlan{single: req.ParallelToolCalls != nil && !*req.ParallelToolCalls}
	for param, raw := range map[string]json.RawMessage{"functions": req.Functions, "function_call": req.FunctionCall} {
		if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
			return nil, badRequest(param, "%s (deprecated by OpenAI) is not supported: use tools and tool_choice", param)
		}
	}
	tools, e := checkTools(req.Tools)
	if e != nil {
		return nil, e
	}
	choice, named, e := readToolChoice(req.ToolChoice)
	if e != nil {
		return nil, e
	}
	auto := s.opts.EnableAutoToolChoice && s.opts.ToolCallParser != ""
	switch {
	case choice == "" && len(tools) > 0 && auto:
		choice = "auto"
	case choice == "" || choice == "none":
		return plan, nil
	case len(tools) == 0:
		return nil, badRequest("tool_choice", "tool_choice %q needs tools", choice)
	case choice == "auto" && !auto:
		return nil, badRequest("tool_choice", `tool_choice "auto" needs the server started with --enable-auto-tool-choice and --tool-call-parser`)
	}
	format := s.opts.ToolCallParser
	if format == "" {
		format = toolcall.DefaultFormat
	}
	p, err := toolcall.Lookup(format)
	if err != nil {
		return nil, &apiError{status: 500, code: "server_error", msg: err.Error()}
	}
	plan.parser = p
	if choice == "auto" {
		return plan, nil
	}
	var chosen []toolcall.Tool
	for _, t := range tools {
		if choice == "required" || t.Name == named {
			chosen = append(chosen, t)
		}
	}
	if len(chosen) == 0 {
		return nil, badRequest("tool_choice", "tool_choice names the function %q, which is not in tools", named)
	}
	for _, t := range chosen {
		if t.Params == nil {
			return nil, badRequest("tool_choice", "tool_choice %q needs the JSON Schema compiler, which is not implemented yet", choice)
		}
	}
	plan.ir, err = toolcall.Grammar(format, chosen, choice == "required" && !plan.single)
	if err != nil {
		return nil, badRequest("tool_choice", "tool_choice: %v", err)
	}
	return plan, nil
}

// checkTools decodes tools, naming the entry and field at fault. A parameters schema the
// compiler refuses is a 400; while the compiler is not there yet, Params stays nil.
func checkTools(raw json.RawMessage) ([]toolcall.Tool, *apiError) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("tools", "tools must be a list of tool objects")
	}
	var out []toolcall.Tool
	seen := map[string]bool{}
	for i, item := range list {
		var t api.Tool
		if err := json.Unmarshal(item, &t); err != nil {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d]: %v", i, err)
		}
		if t.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), `tools[%d].type must be "function", got %q`, i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d].function.name is required", i)
		}
		if seen[t.Function.Name] {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d].function.name %q is declared twice", i, t.Function.Name)
		}
		seen[t.Function.Name] = true
		param := fmt.Sprintf("tools[%d].function.parameters", i)
		ir, err := toolcall.ParamsIR(t.Function.Parameters)
		if err != nil && !strings.Contains(err.Error(), "not implemented") {
			return nil, badRequest(param, "%s: %v", param, err)
		}
		out = append(out, toolcall.Tool{Name: t.Function.Name, Params: ir})
	}
	return out, nil
}

// readToolChoice returns "", "none", "auto", "required", or "function" and its name.
func readToolChoice(raw json.RawMessage) (choice, name string, e *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		switch str {
		case "none", "auto", "required":
			return str, "", nil
		}
		return "", "", badRequest("tool_choice", `tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}, got %q`, str)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
		return "", "", badRequest("tool_choice", `tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}, got %s`, raw)
	}
	return "function", obj.Function.Name, nil
}

// toolGrammarConstraint compiles a tool grammar and returns a maker of one matcher per choice,
// through the structured-output grammar cache (structured_cache.go: compiled once per IR, under
// the time limit, with the model's one Vocab).
func (st *state) toolGrammarConstraint(ir *grammar.IR) (func() engine.Constraint, *apiError) {
	key, err := json.Marshal(ir)
	if err != nil {
		return nil, badRequest("tool_choice", "the tool-call grammar: %v", err)
	}
	p, e := st.CompileConstraint("tool_choice", "tools\x00"+string(key), func() (*grammar.IR, error) { return ir, nil })
	if e != nil {
		e.msg = strings.Replace(e.msg, "tool_choice: ", "tool_choice: the tool-call grammar: ", 1)
		return nil, e
	}
	return p.NewConstraint, nil
}
