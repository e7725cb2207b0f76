// Structured output's and the refused fields' 400s: each names the field and says why, before
// any compute.
package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/grammar"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// badCase is a request field (or two) that must be a 400 naming param, its message holding
// every string of says.
type badCase struct {
	name   string
	fields map[string]any
	param  string
	says   []string
	stub   bool // the reason comes from a grammar frontend or Compile: skipped while they are stubs
}

var structuredBad = []badCase{
	{"two fields", map[string]any{"response_format": map[string]any{"type": "json_object"}, "guided_regex": "a+"},
		"guided_regex", []string{"response_format", "guided_regex", "one of them"}, false},
	{"two fields inside structured_outputs", map[string]any{"structured_outputs": map[string]any{"json": map[string]any{}, "regex": "a"}},
		"structured_outputs.regex", []string{"structured_outputs.json", "structured_outputs.regex"}, false},
	{"structured_outputs and guided_choice", map[string]any{"structured_outputs": map[string]any{"choice": []string{"a"}}, "guided_choice": []string{"b"}},
		"guided_choice", []string{"structured_outputs.choice", "guided_choice"}, false},
	{"response_format type", map[string]any{"response_format": map[string]any{"type": "yaml"}}, "response_format.type", []string{"yaml"}, false},
	{"json_schema without schema", map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x"}}},
		"response_format.json_schema.schema", []string{"schema"}, false},
	{"schema not JSON", map[string]any{"guided_json": "{not json"}, "guided_json", []string{"guided_json"}, false},
	{"schema a number", map[string]any{"structured_outputs": map[string]any{"json": 5}}, "structured_outputs.json", []string{"JSON Schema object"}, false},
	{"empty choice", map[string]any{"guided_choice": []string{}}, "guided_choice", []string{"at least one"}, false},
	{"empty grammar", map[string]any{"guided_grammar": " "}, "guided_grammar", []string{"empty"}, false},
	{"whitespace pattern", map[string]any{"guided_whitespace_pattern": `[ ]*`, "guided_json": map[string]any{}}, "guided_whitespace_pattern", []string{"compact"}, false},
	{"structural_tag", map[string]any{"structured_outputs": map[string]any{"structural_tag": "{}"}}, "structured_outputs.structural_tag", []string{"not supported"}, false},
	{"bad regex", map[string]any{"guided_regex": "(ab"}, "guided_regex", []string{"missing closing )"}, false},
	{"bad regex in structured_outputs", map[string]any{"structured_outputs": map[string]any{"regex": "a{2,1}"}}, "structured_outputs.regex", []string{"invalid repeat count"}, false},
	{"regex too large", map[string]any{"guided_regex": strings.Repeat("a", 20000)}, "guided_regex", []string{"too large", "20000 bytes"}, false},
	{"invalid schema", map[string]any{"response_format": map[string]any{"type": "json_schema",
		"json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": 5}}}}, "response_format.json_schema.schema", []string{"type"}, true},
	{"invalid schema keyword value", map[string]any{"guided_json": map[string]any{"type": "object", "properties": "nope"}}, "guided_json", []string{"properties"}, true},
	{"unsatisfiable schema", map[string]any{"guided_json": map[string]any{"type": "integer", "minimum": 10, "maximum": 1}}, "guided_json", []string{"minimum"}, true},
	{"unsatisfiable allOf", map[string]any{"structured_outputs": map[string]any{"json": map[string]any{"allOf": []any{
		map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}}}, "structured_outputs.json", []string{"unsatisfiable"}, true},
	{"bad GBNF", map[string]any{"guided_grammar": `root ::= ("a"`}, "guided_grammar", []string{"line 1", "unclosed"}, true},
	{"GBNF undefined rule", map[string]any{"structured_outputs": map[string]any{"grammar": `root ::= item`}}, "structured_outputs.grammar", []string{`undefined rule "item"`}, true},
	{"bad Lark", map[string]any{"guided_grammar": "start: (\"a\""}, "guided_grammar", []string{"lark", "unclosed"}, true},
	{"grammar too large", map[string]any{"guided_grammar": manyRules(400)}, "guided_grammar", []string{"rules"}, true},
}

// manyRules is a GBNF grammar of n chained rules.
func manyRules(n int) string {
	var b strings.Builder
	b.WriteString("root ::= r0\n")
	for i := range n {
		fmt.Fprintf(&b, "r%d ::= \"x%d\" r%d | \"y\"\n", i, i, i+1)
	}
	fmt.Fprintf(&b, "r%d ::= \"end\"\n", n)
	return b.String()
}

var refusedBad = []badCase{
	{"suffix", map[string]any{"suffix": "the end"}, "suffix", []string{"fill-in-the-middle"}, false},
	{"best_of", map[string]any{"best_of": 3}, "best_of", []string{"best_of 3"}, false},
	{"best_of not a number", map[string]any{"best_of": "3"}, "best_of", []string{"integer"}, false},
	{"min_tokens", map[string]any{"min_tokens": 4}, "min_tokens", nil, false},
	{"include_stop_str_in_output", map[string]any{"include_stop_str_in_output": true}, "include_stop_str_in_output", nil, false},
	{"skip_special_tokens", map[string]any{"skip_special_tokens": false}, "skip_special_tokens", nil, false},
	{"use_beam_search", map[string]any{"use_beam_search": true}, "use_beam_search", nil, false},
	{"allowed_token_ids", map[string]any{"allowed_token_ids": []int{1, 2}}, "allowed_token_ids", nil, false},
	{"bad_words", map[string]any{"bad_words": []string{"dog"}}, "bad_words", nil, false},
	{"prompt_logprobs", map[string]any{"prompt_logprobs": 1}, "prompt_logprobs", nil, false},
	{"priority", map[string]any{"priority": 2}, "priority", nil, false},
}

// postBad sends body fields on top of a valid request and checks the 400.
func postBad(t *testing.T, send func(...option.RequestOption) error, bc badCase) {
	t.Helper()
	var opts []option.RequestOption
	for k, v := range bc.fields {
		opts = append(opts, option.WithJSONSet(k, v))
	}
	err := send(opts...)
	if bc.stub {
		skipIfStub(t, err)
	}
	e := apiErr(t, err, 400, bc.param)
	for _, s := range append(bc.says, bc.param) {
		if !strings.Contains(e.Message, s) {
			t.Errorf("%s: message %q lacks %q", bc.name, e.Message, s)
		}
	}
}

func TestStructuredErrors(t *testing.T) {
	ts := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"},
		Grammar: GrammarOptions{MaxSourceBytes: 16384, Limits: grammar.Limits{MaxRules: 100, MaxLexerBytes: 1 << 20}}}, nil)
	c := client(ts)
	ctx := context.Background()
	chat := func(opts ...option.RequestOption) error {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "stories",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(4)}, opts...)
		return err
	}
	cmpl := func(opts ...option.RequestOption) error {
		_, err := c.Completions.New(ctx, cmplParams(prompt, 4), opts...)
		return err
	}
	chatStream := func(opts ...option.RequestOption) error {
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "stories",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(4)}, opts...)
		for st.Next() {
		}
		return st.Err()
	}
	cmplStream := func(opts ...option.RequestOption) error {
		st := c.Completions.NewStreaming(ctx, cmplParams(prompt, 4), opts...)
		for st.Next() {
		}
		return st.Err()
	}
	endpoints := map[string]func(...option.RequestOption) error{"chat": chat, "completions": cmpl,
		"chat stream": chatStream, "completions stream": cmplStream}
	for name, send := range endpoints {
		for _, bc := range structuredBad {
			t.Run(name+"/"+bc.name, func(t *testing.T) { postBad(t, send, bc) })
		}
	}
	for _, bc := range refusedBad {
		t.Run("refused/"+bc.name, func(t *testing.T) { postBad(t, cmpl, bc) })
	}
	t.Run("refused on chat", func(t *testing.T) {
		for _, bc := range []badCase{
			{"echo", map[string]any{"echo": true}, "echo", nil, false},
			{"continue_final_message", map[string]any{"continue_final_message": true}, "continue_final_message", nil, false},
			{"chat_template", map[string]any{"chat_template": "{{ messages }}"}, "chat_template", nil, false},
			{"modalities", map[string]any{"modalities": []string{"text", "audio"}}, "modalities", nil, false},
			{"best_of", map[string]any{"best_of": 2}, "best_of", nil, false},
		} {
			postBad(t, chat, bc)
		}
	})
	// The values that ask for nothing pass, and so does a backend name alone.
	for _, f := range []map[string]any{{"best_of": 1}, {"min_tokens": 0}, {"skip_special_tokens": true},
		{"use_beam_search": false}, {"suffix": ""}, {"guided_decoding_backend": "xgrammar"},
		{"response_format": map[string]any{"type": "text"}}, {"length_penalty": 1.0}, {"priority": 0}} {
		var opts []option.RequestOption
		for k, v := range f {
			opts = append(opts, option.WithJSONSet(k, v))
		}
		if err := cmpl(opts...); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
}
