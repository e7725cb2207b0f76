// The grammar of well-formed calls, for tool_choice "required" and a named function: the
// model can then write nothing but calls of the declared tools, in the parser's format, with
// arguments that match each tool's parameter schema.

package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/grammar"
)

// DefaultFormat is the call format of tool_choice "required" and named when the server has no
// --tool-call-parser: Hermes/Qwen <tool_call> blocks.
const DefaultFormat = "hermes"

// Tool is a declared function: its name and the grammar of its arguments (ParamsIR).
type Tool struct {
	Name   string
	Params *grammar.IR
}

// ParamsIR compiles a tool's parameters schema to the grammar of its arguments (compact JSON).
// No schema (absent or null) allows any JSON object.
func ParamsIR(schema json.RawMessage) (*grammar.IR, error) {
	s := bytes.TrimSpace(schema)
	if len(s) == 0 || string(s) == "null" {
		s = []byte(`{"type": "object"}`)
	}
	var v any
	if err := json.Unmarshal(s, &v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("a JSON Schema must be an object, got %s", s)
	}
	return grammar.JSONSchema(s, grammar.SchemaOptions{CloseObjects: true})
}

// Grammar returns the grammar of calls of tools in format (a parser name; "" = DefaultFormat):
// one call, or with multiple one or more (parallel calls).
//
//	hermes:      <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>  (several: joined by "\n")
//	llama3_json: {"name": "NAME", "parameters": ARGS}                            (several: joined by "; ")
//	mistral:     [TOOL_CALLS][{"name": "NAME", "arguments": ARGS}]               (several: ", " in the list)
func Grammar(format string, tools []Tool, multiple bool) (*grammar.IR, error) {
	if format == "" {
		format = DefaultFormat
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("no tools to call")
	}
	var open, argsKey, close, before, sep, after string
	switch format {
	case "hermes":
		open, argsKey, close, sep = "<tool_call>\n{\"name\": ", "arguments", "}\n</tool_call>", "\n"
	case "llama3_json":
		open, argsKey, close, sep = "{\"name\": ", "parameters", "}", "; "
	case "mistral":
		before, open, argsKey, close, sep, after = "[TOOL_CALLS][", "{\"name\": ", "arguments", "}", ", ", "]"
	default:
		return nil, fmt.Errorf("no call grammar for tool-call parser %q", format)
	}
	g := &grammar.IR{Start: "root", Rules: map[string]*grammar.Expr{}}
	var alts []*grammar.Expr
	for i, t := range tools {
		if t.Params == nil {
			return nil, fmt.Errorf("tool %q has no parameters grammar", t.Name)
		}
		args := Merge(g, t.Params, fmt.Sprintf("t%d_", i))
		rule := fmt.Sprintf("call_t%d", i)
		g.Rules[rule] = grammar.Seq(grammar.Lit(open+jsonString(t.Name)+", \""+argsKey+"\": "),
			grammar.Ref(args), grammar.Lit(close))
		alts = append(alts, grammar.Ref(rule))
	}
	g.Rules["call"] = grammar.Alt(alts...)
	calls := grammar.Ref("call")
	if multiple {
		calls = grammar.Seq(grammar.Ref("call"), grammar.Star(grammar.Seq(grammar.Lit(sep), grammar.Ref("call"))))
	}
	g.Rules["root"] = grammar.Seq(grammar.Lit(before), calls, grammar.Lit(after))
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// Merge copies src's rules into dst with their names prefixed and returns the name of src's
// start rule in dst. The prefix must keep the copies apart from dst's own rules.
func Merge(dst, src *grammar.IR, prefix string) string {
	var cp func(e *grammar.Expr) *grammar.Expr
	cp = func(e *grammar.Expr) *grammar.Expr {
		n := *e
		if e.Kind == grammar.KindRef {
			n.Text = prefix + e.Text
		}
		if e.Subs != nil {
			n.Subs = make([]*grammar.Expr, len(e.Subs))
			for i, s := range e.Subs {
				n.Subs[i] = cp(s)
			}
		}
		return &n
	}
	for name, e := range src.Rules {
		dst.Rules[prefix+name] = cp(e)
	}
	return prefix + src.Start
}

// jsonString is s as a JSON string, as json.Marshal writes it but without escaping <, > and &.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
