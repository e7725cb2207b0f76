// --reasoning-parser on chat completions: the parser that splits a reply's reasoning off
// (tools_output.go applies it), and the wrapper that keeps a grammar (structured output or a
// tool call) off the reasoning so it constrains the answer only.
package server

import (
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/reasoning"
)

// reasoningParser is the server's reasoning parser (nil: none, or an unknown name, which
// serve refuses at start).
func (s *Server) reasoningParser() *reasoning.Parser {
	if s.opts.ReasoningParser == "" {
		return nil
	}
	p, _ := reasoning.Lookup(s.opts.ReasoningParser)
	return p
}

// answerOnly makes each constraint of mk apply after the reasoning, when the server parses
// reasoning; prompt is the rendered prompt (it may have closed the reasoning already).
func (s *Server) answerOnly(st *state, mk func() engine.Constraint, prompt string) func() engine.Constraint {
	rp := s.reasoningParser()
	if mk == nil || rp == nil {
		return mk
	}
	size := st.b.Model.Config.Vocab
	return func() engine.Constraint { return rp.Wrap(mk(), st.b.Tok.Piece, size, prompt) }
}
