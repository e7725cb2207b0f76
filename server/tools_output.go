// A chat choice's reply as the client sees it: the reasoning split off first (with a
// --reasoning-parser), then the tool calls found in the rest (when the request's tool plan has
// a parser); whole for a non-streamed response, as deltas for a streamed one.
package server

import (
	"strings"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/reasoning"
	"github.com/llmcloud/llmcloud/toolcall"
)

// replyParser reads one choice's reply. The zero parts (nil parsers) pass text through.
type replyParser struct {
	rp     *reasoning.Parser
	tp     *toolcall.Parser
	single bool // at most one call (parallel_tool_calls false)
	forced bool // a grammar shaped the reply: keep its complete calls if it was cut off
	rs     *reasoning.Stream
	ts     *toolcall.Stream
	calls  int // calls given out
}

func (s *Server) newReplyParser(plan *toolPlan) *replyParser {
	p := &replyParser{rp: s.reasoningParser()}
	if plan != nil {
		p.tp, p.single, p.forced = plan.parser, plan.single, plan.ir != nil
	}
	if p.rp != nil {
		p.rs = p.rp.NewStream()
	}
	if p.tp != nil {
		p.ts = p.tp.NewStream()
	}
	return p
}

// message is the assistant message of a whole reply.
func (p *replyParser) message(text string) api.ChatMessage {
	m := api.ChatMessage{Role: "assistant"}
	content := text
	if p.rp != nil {
		var r string
		r, content = p.rp.Parse(text)
		if r != "" {
			m.ReasoningContent, m.Reasoning = &r, &r
		}
	}
	if p.tp != nil {
		var calls []toolcall.Call
		if p.forced {
			content, calls = p.tp.ParseComplete(content)
		} else {
			content, calls = p.tp.Parse(content)
		}
		if p.single && len(calls) > 1 {
			calls = calls[:1]
		}
		for _, c := range calls {
			m.ToolCalls = append(m.ToolCalls, api.ToolCall{ID: c.ID, Type: "function",
				Function: api.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		p.calls = len(calls)
		if len(calls) > 0 && strings.TrimSpace(content) == "" {
			content = ""
		}
	}
	if content != "" || (m.ToolCalls == nil && m.ReasoningContent == nil) {
		m.Content = &content
	}
	return m
}

// feed turns the next piece of a streamed reply into deltas (final: the reply ended).
func (p *replyParser) feed(text string, final bool) []api.ChatDelta {
	var out []api.ChatDelta
	content := text
	if p.rs != nil {
		r, c := p.rs.Feed(text)
		if final {
			r2, c2 := p.rs.Finish()
			r, c = r+r2, c+c2
		}
		if r != "" {
			out = append(out, api.ChatDelta{ReasoningContent: r, Reasoning: r})
		}
		content = c
	}
	if p.ts == nil {
		if content != "" {
			out = append(out, api.ChatDelta{Content: content})
		}
		return out
	}
	ds := p.ts.Feed(content)
	if final {
		ds = append(ds, p.ts.Finish()...)
	}
	for _, d := range ds {
		if d.Call == nil {
			out = append(out, api.ChatDelta{Content: d.Content})
			continue
		}
		c := d.Call
		if p.single && c.Index > 0 {
			continue
		}
		td := api.ToolCallDelta{Index: c.Index, Function: api.FunctionDelta{Arguments: c.Arguments}}
		if c.First {
			td.ID, td.Type, td.Function.Name = c.ID, "function", c.Name
			p.calls++
		}
		out = append(out, api.ChatDelta{ToolCalls: []api.ToolCallDelta{td}})
	}
	return out
}

// finishReason is the choice's finish_reason: "tool_calls" when the reply made calls and
// ended on its own.
func (p *replyParser) finishReason(engineReason string) string {
	if p.calls > 0 && engineReason == "stop" {
		return "tool_calls"
	}
	return engineReason
}
