// The streamed Responses API: named Server-Sent Events, each with its sequence_number, in
// OpenAI's order: response.created, response.in_progress, then per output item
// output_item.added, (content_part.added, output_text.delta..., output_text.done,
// content_part.done | function_call_arguments.delta, function_call_arguments.done),
// output_item.done, and last response.completed (response.incomplete when max_output_tokens
// cut it short, response.failed on an engine error). No [DONE] follows, as with OpenAI.
package server

import (
	"net/http"
	"strings"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/engine"
)

// responseStream writes one response's events.
type responseStream struct {
	sse    *api.SSEWriter
	seq    int
	failed bool // the client is gone: the rest is drained unwritten
}

func (s *responseStream) emit(ev api.ResponseStreamEvent) {
	if s.failed {
		return
	}
	ev.SequenceNumber = s.seq
	s.seq++
	if s.sse.NamedEvent(ev.Type, ev) != nil {
		s.failed = true
	}
}

func intp(i int) *int                   { return &i }
func strp(s string) *string             { return &s }
func (rc *responsesCall) msgID() string { return "msg_" + rc.base }

// stream answers with events while outs runs.
func (rc *responsesCall) stream(w http.ResponseWriter, outs <-chan choiceOutput) {
	s := &responseStream{sse: api.NewSSEWriter(w)}
	w.WriteHeader(http.StatusOK)
	s.emit(api.ResponseStreamEvent{Type: "response.created", Response: rc.object("in_progress", nil)})
	s.emit(api.ResponseStreamEvent{Type: "response.in_progress", Response: rc.object("in_progress", nil)})
	var text strings.Builder
	var last engine.Output
	live := rc.live // else the parsers need the whole reply: the items come at the end
	if live {
		item := api.ResponseItem{Type: "message", ID: rc.msgID(), Status: "in_progress", Role: "assistant",
			Content: []api.OutputContent{}}
		s.emit(api.ResponseStreamEvent{Type: "response.output_item.added", OutputIndex: intp(0), Item: &item})
		part := outputText("")
		s.emit(api.ResponseStreamEvent{Type: "response.content_part.added", ItemID: rc.msgID(), OutputIndex: intp(0),
			ContentIndex: intp(0), Part: &part})
	}
	for co := range outs {
		o := co.out
		last = o
		text.WriteString(o.Text)
		if live && o.Text != "" {
			s.emit(api.ResponseStreamEvent{Type: "response.output_text.delta", ItemID: rc.msgID(), OutputIndex: intp(0),
				ContentIndex: intp(0), Delta: strp(o.Text), Logprobs: []any{}})
		}
	}
	if last.Err != nil {
		resp := rc.object("failed", nil)
		resp.Error = &api.ResponseError{Code: "server_error", Message: last.Err.Error()}
		s.emit(api.ResponseStreamEvent{Type: "response.failed", Response: resp})
		return
	}
	resp := rc.final(text.String(), last)
	for i, item := range resp.Output {
		if live && i == 0 {
			rc.finishMessage(s, i, item, false)
			continue
		}
		rc.emitItem(s, i, item)
	}
	typ := "response.completed"
	if resp.Status == "incomplete" {
		typ = "response.incomplete"
	}
	s.emit(api.ResponseStreamEvent{Type: typ, Response: resp})
}

// emitItem streams a finished item whole: added, its content or arguments in one delta, done.
func (rc *responsesCall) emitItem(s *responseStream, idx int, item api.ResponseItem) {
	added := item
	added.Status = "in_progress"
	if item.Type == "reasoning" { // whole: no reasoning_text deltas
		s.emit(api.ResponseStreamEvent{Type: "response.output_item.added", OutputIndex: intp(idx), Item: &added})
		s.emit(api.ResponseStreamEvent{Type: "response.output_item.done", OutputIndex: intp(idx), Item: &item})
		return
	}
	if item.Type == "message" {
		added.Content = []api.OutputContent{}
		s.emit(api.ResponseStreamEvent{Type: "response.output_item.added", OutputIndex: intp(idx), Item: &added})
		rc.finishMessage(s, idx, item, true)
		return
	}
	added.Arguments = strp("")
	s.emit(api.ResponseStreamEvent{Type: "response.output_item.added", OutputIndex: intp(idx), Item: &added})
	s.emit(api.ResponseStreamEvent{Type: "response.function_call_arguments.delta", ItemID: item.ID,
		OutputIndex: intp(idx), Delta: item.Arguments})
	s.emit(api.ResponseStreamEvent{Type: "response.function_call_arguments.done", ItemID: item.ID,
		OutputIndex: intp(idx), Name: item.Name, Arguments: item.Arguments})
	s.emit(api.ResponseStreamEvent{Type: "response.output_item.done", OutputIndex: intp(idx), Item: &item})
}

// finishMessage ends a message item: (its part and text when whole), text done, part done,
// item done.
func (rc *responsesCall) finishMessage(s *responseStream, idx int, item api.ResponseItem, whole bool) {
	part := item.Content[0]
	if whole {
		empty := outputText("")
		s.emit(api.ResponseStreamEvent{Type: "response.content_part.added", ItemID: item.ID, OutputIndex: intp(idx),
			ContentIndex: intp(0), Part: &empty})
		if part.Text != "" {
			s.emit(api.ResponseStreamEvent{Type: "response.output_text.delta", ItemID: item.ID, OutputIndex: intp(idx),
				ContentIndex: intp(0), Delta: strp(part.Text), Logprobs: []any{}})
		}
	}
	s.emit(api.ResponseStreamEvent{Type: "response.output_text.done", ItemID: item.ID, OutputIndex: intp(idx),
		ContentIndex: intp(0), Text: strp(part.Text), Logprobs: []any{}})
	s.emit(api.ResponseStreamEvent{Type: "response.content_part.done", ItemID: item.ID, OutputIndex: intp(idx),
		ContentIndex: intp(0), Part: &part})
	s.emit(api.ResponseStreamEvent{Type: "response.output_item.done", OutputIndex: intp(idx), Item: &item})
}
