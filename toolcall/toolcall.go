// Package toolcall finds tool calls in a model's reply, in the formats vLLM's tool-call
// parsers read (chosen by the same names): hermes (Qwen2.5/Qwen3, Hermes: <tool_call> blocks),
// llama3_json (Llama 3.x: a JSON object, optionally after <|python_tag|>, several joined by
// ";") and mistral ([TOOL_CALLS] and a JSON list, or the newer name[ARGS]{...}).
//
// A Parser splits a whole reply into content and calls (Parse), or follows a streamed reply
// (NewStream) and turns each text delta into content deltas and tool-call deltas as OpenAI
// streams them: a call's first delta carries its index, id and name with empty arguments, the
// later ones pieces of the arguments. Text that may be the start of a call is held back until
// it is known not to be. The package also builds the grammar whose language is exactly the
// well-formed calls of a list of tools (grammar.go), for tool_choice "required" and named.
package toolcall

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// Call is one parsed tool call. Arguments is the JSON text of the arguments, as the model
// wrote it.
type Call struct {
	ID        string
	Name      string
	Arguments string
}

// Delta is one piece of a streamed reply: content text, or a piece of a tool call.
type Delta struct {
	Content string
	Call    *CallDelta
}

// CallDelta is a piece of tool call Index. The first piece of a call has First set and carries
// ID and Name (and empty Arguments); later pieces carry only Arguments text.
type CallDelta struct {
	Index     int
	First     bool
	ID        string
	Name      string
	Arguments string
}

// Parser is a tool-call format.
type Parser struct {
	name string
	step func(s *Stream) bool // advances s as far as its text allows; false when it needs more
}

var parsers = map[string]*Parser{}

func register(name string, step func(*Stream) bool) {
	parsers[name] = &Parser{name: name, step: step}
}

// Lookup returns the parser called name (vLLM's names: hermes, llama3_json, mistral).
func Lookup(name string) (*Parser, error) {
	if p, ok := parsers[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown tool-call parser %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the known parsers.
func Names() []string {
	var out []string
	for n := range parsers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Name is the parser's name.
func (p *Parser) Name() string { return p.name }

// Parse splits a whole reply into its content and its calls. A reply whose calls do not parse
// (broken JSON, a call without a name, a reply cut off inside a call) is all content, with no
// calls, as vLLM returns it.
func (p *Parser) Parse(text string) (content string, calls []Call) {
	content, calls, broken := p.parse(text)
	if broken {
		return text, nil
	}
	return content, calls
}

// ParseComplete is Parse for a reply a grammar shaped (tool_choice "required"): the complete
// calls are kept even when the reply was cut off (max_tokens) inside a later one.
func (p *Parser) ParseComplete(text string) (content string, calls []Call) {
	content, calls, _ = p.parse(text)
	return content, calls
}

func (p *Parser) parse(text string) (content string, calls []Call, broken bool) {
	s := p.NewStream()
	var sb strings.Builder
	for _, d := range append(s.Feed(text), s.Finish()...) {
		sb.WriteString(d.Content)
	}
	return sb.String(), s.Calls(), s.broken
}

// NewID returns a fresh tool-call id: "call_" and 24 letters and digits, like OpenAI's.
func NewID() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 24)
	for i := range b {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	return "call_" + string(b)
}
