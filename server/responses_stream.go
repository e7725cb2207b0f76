// The streamed Responses API: named Server-Sent Events, each with its sequence_number, in
// OpenAI's order: response.created, response.in_progress, then per output item
// output_item.added, (content_part.added, output_text.delta..., output_text.done,
// content_part.done | function_call_arguments.delta..., function_call_arguments.done),
// output_item.done, and last response.completed (response.incomplete when max_output_tokens
// cut it short, response.failed on an engine error). No [DONE] follows, as with OpenAI.
// Without a reasoning parser the items stream as the reply is generated: the tool-call
// parser's stream splits it into message text and function calls (liveItems), and the final
// response lists the items as streamed. A reasoning parser needs the whole reply: then every
// item is sent whole at the end.
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
	var live *liveItems
	if rc.live {
		live = &liveItems{rc: rc, s: s, open: -1, calls: map[int]int{}}
		if rc.reply.ts == nil { // all text is message text: the message opens at once
			live.openMessage()
		}
	}
	var text strings.Builder
	var last engine.Output
	finished := false
	for co := range outs {
		o := co.out
		last = o
		text.WriteString(o.Text)
		if live != nil && (o.Text != "" || o.Finished) && !finished {
			live.add(rc.reply.feed(o.Text, o.Finished))
			finished = o.Finished
		}
	}
	if last.Err != nil {
		resp := rc.object("failed", nil)
		resp.Error = &api.ResponseError{Code: "server_error", Message: last.Err.Error()}
		s.emit(api.ResponseStreamEvent{Type: "response.failed", Response: resp})
		return
	}
	var resp *api.Response
	if live != nil {
		if !finished {
			live.add(rc.reply.feed("", true))
		}
		resp = rc.respond(live.end(rc.status(last)), last)
	} else {
		resp = rc.final(text.String(), last)
		for i, item := range resp.Output {
			rc.emitItem(s, i, item)
		}
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

// liveItems streams the output items as the reply parser gives out its deltas: text opens a
// message item (whitespace alone is held back: it opens none), a call's first delta closes
// the item before it and opens a function_call item, and its argument pieces follow.
type liveItems struct {
	rc      *responsesCall
	s       *responseStream
	items   []api.ResponseItem // the items so far, by output_index
	open    int                // the item being written (-1: none)
	text    strings.Builder    // the open message's text
	pending string             // whitespace not yet given to a message
	calls   map[int]int        // a call's index -> its output_index
}

// add streams the next deltas.
func (l *liveItems) add(deltas []api.ChatDelta) {
	for _, d := range deltas {
		if d.Content != "" {
			l.content(d.Content)
		}
		for _, tc := range d.ToolCalls {
			l.call(tc)
		}
	}
}

func (l *liveItems) content(t string) {
	if l.open >= 0 && l.items[l.open].Type == "message" {
		l.delta(t)
		return
	}
	l.pending += t
	if strings.TrimSpace(l.pending) == "" {
		return
	}
	l.close("completed")
	l.openMessage()
	l.delta(l.pending)
	l.pending = ""
}

// delta adds text to the open message.
func (l *liveItems) delta(t string) {
	l.text.WriteString(t)
	l.s.emit(api.ResponseStreamEvent{Type: "response.output_text.delta", ItemID: l.items[l.open].ID,
		OutputIndex: intp(l.open), ContentIndex: intp(0), Delta: strp(t), Logprobs: []any{}})
}

// openMessage adds a message item (the first is msg_<base>, any later one msg_<base>_<index>).
func (l *liveItems) openMessage() {
	idx := len(l.items)
	id := l.rc.msgID()
	for _, it := range l.items {
		if it.Type == "message" {
			id += "_" + itoa(idx)
			break
		}
	}
	item := api.ResponseItem{Type: "message", ID: id, Status: "in_progress", Role: "assistant", Content: []api.OutputContent{}}
	l.items = append(l.items, item)
	l.open = idx
	l.text.Reset()
	l.s.emit(api.ResponseStreamEvent{Type: "response.output_item.added", OutputIndex: intp(idx), Item: &item})
	part := outputText("")
	l.s.emit(api.ResponseStreamEvent{Type: "response.content_part.added", ItemID: id, OutputIndex: intp(idx),
		ContentIndex: intp(0), Part: &part})
}

func (l *liveItems) call(tc api.ToolCallDelta) {
	if tc.ID != "" { // the call's first delta
		l.close("completed")
		l.pending = ""
		idx := len(l.items)
		empty := ""
		item := api.ResponseItem{Type: "function_call", ID: "fc_" + l.rc.base + "_" + itoa(tc.Index), CallID: tc.ID,
			Name: tc.Function.Name, Arguments: &empty, Status: "in_progress"}
		l.items = append(l.items, item)
		l.calls[tc.Index] = idx
		l.open = idx
		l.s.emit(api.ResponseStreamEvent{Type: "response.output_item.added", OutputIndex: intp(idx), Item: &item})
	}
	idx, ok := l.calls[tc.Index]
	if !ok || tc.Function.Arguments == "" {
		return
	}
	item := &l.items[idx]
	args := *item.Arguments + tc.Function.Arguments
	item.Arguments = &args
	l.s.emit(api.ResponseStreamEvent{Type: "response.function_call_arguments.delta", ItemID: item.ID,
		OutputIndex: intp(idx), Delta: strp(tc.Function.Arguments)})
}

// close finishes the open item with the given status.
func (l *liveItems) close(status string) {
	if l.open < 0 {
		return
	}
	idx := l.open
	l.open = -1
	item := &l.items[idx]
	item.Status = status
	if item.Type == "message" {
		item.Content = []api.OutputContent{outputText(l.text.String())}
		l.rc.finishMessage(l.s, idx, *item, false)
		return
	}
	done := *item
	l.s.emit(api.ResponseStreamEvent{Type: "response.function_call_arguments.done", ItemID: item.ID,
		OutputIndex: intp(idx), Name: item.Name, Arguments: item.Arguments})
	l.s.emit(api.ResponseStreamEvent{Type: "response.output_item.done", OutputIndex: intp(idx), Item: &done})
}

// end closes the last item once the reply is over (a call the reply cut off is incomplete)
// and returns the items; a reply with none is one message, maybe empty.
func (l *liveItems) end(status string) []api.ResponseItem {
	if l.open >= 0 && l.items[l.open].Type == "function_call" {
		status = "incomplete"
		for _, c := range l.rc.reply.ts.Calls() {
			if c.ID == l.items[l.open].CallID {
				status = "completed"
			}
		}
	}
	l.close(status)
	if len(l.items) == 0 {
		l.openMessage()
		if l.pending != "" {
			l.delta(l.pending)
		}
		l.close(status)
	}
	return l.items
}
