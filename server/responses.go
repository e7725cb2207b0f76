// POST /v1/responses, the Responses API as vLLM serves it: input items rendered through the
// chat template, generated like a chat completion (text.format constrains the output as
// response_format does), answered as a response object with output items, or streamed as
// named events (responses_stream.go). Responses are not stored, but their output items are
// kept a while for item_reference (responses_store.go); previous_response_id is a 400.
package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/engine"
)

// responsesCall is one validated Responses request on its way through the engine.
type responsesCall struct {
	st      *state
	id      string // resp_...
	base    string // the id's suffix, for item ids
	model   string
	created int64
	req     *api.ResponsesRequest
	g       *genRequest
	reply   *replyParser // tool calls and reasoning out of the reply (responses_tools.go)
	live    bool         // the items stream as they come (no reasoning parser needs the whole reply)
	items   *itemStore   // where the output items are kept (nil: store false)
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request, st *state) {
	body, e := readBody(r)
	if e != nil {
		s.fail(w, e)
		return
	}
	var req api.ResponsesRequest
	if e := unmarshalBody(body, &req); e != nil {
		s.fail(w, e)
		return
	}
	if e := refuseFields(body, responsesRefused); e != nil {
		s.fail(w, e)
		return
	}
	rc, e := s.prepareResponses(r, st, &req)
	if e != nil {
		s.fail(w, e)
		return
	}
	outs, e := s.start(r.Context(), st, rc.g, rc.id)
	if e != nil {
		s.fail(w, e)
		return
	}
	if req.Stream {
		rc.stream(w, outs)
		return
	}
	var text strings.Builder
	var last engine.Output
	for co := range outs {
		text.WriteString(co.out.Text)
		last = co.out
	}
	if last.Err != nil {
		s.fail(w, &apiError{status: http.StatusInternalServerError, code: "engine_error", msg: last.Err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, rc.final(text.String(), last))
}

// prepareResponses checks the request and builds its generation, all before any compute.
func (s *Server) prepareResponses(r *http.Request, st *state, req *api.ResponsesRequest) (*responsesCall, *apiError) {
	model, e := st.checkModel(req.Model)
	if e != nil {
		return nil, e
	}
	if req.PreviousResponseID != nil && *req.PreviousResponseID != "" {
		return nil, badRequest("previous_response_id",
			"previous_response_id needs stored responses, and llmcloud stores none: send the whole conversation in input")
	}
	msgs, e := responsesMessages(req.Input, req.Instructions, &s.items)
	if e != nil {
		return nil, e
	}
	tools, _, e := chatTools(req.Tools)
	if e != nil {
		return nil, e
	}
	choice, _, e := chatToolChoice(req.ToolChoice)
	if e != nil {
		return nil, e
	}
	plan, e := s.planResponsesTools(tools, choice, req.ParallelToolCalls)
	if e != nil {
		return nil, e
	}
	spec, e := textFormatSpec(req.Text)
	if e != nil {
		return nil, e
	}
	if spec != nil && plan.ir != nil {
		return nil, badRequest("tool_choice", "a forced tool_choice and text.format cannot both constrain one reply")
	}
	f := api.SamplingFields{Temperature: req.Temperature, TopP: req.TopP, User: req.User}
	g, e := s.buildGen(st, &f, req.MaxOutputTokens, "max_output_tokens", false, 0)
	if e != nil {
		return nil, e
	}
	g.adapter = st.adapterOf(model)
	g.kind = "resp"
	if cp, e := st.compileSpec(spec); e != nil {
		return nil, e
	} else if cp != nil {
		g.constraint = cp.NewConstraint
	}
	prompt, e := st.renderChat(msgs, tools, nil, true)
	if e != nil {
		if strings.HasPrefix(e.param, "messages") { // input items, made messages (other indices)
			e.param = "input"
		}
		return nil, e
	}
	if plan.ir != nil {
		if g.constraint, e = st.toolGrammarConstraint(plan.ir); e != nil {
			return nil, e
		}
	}
	g.constraint = s.answerOnly(st, g.constraint, prompt)
	g.prompts = [][]int{st.b.Tok.Encode(prompt, false, true)}
	if e := g.checkPrompts(st, "input"); e != nil {
		return nil, e
	}
	base := strings.TrimPrefix(s.respID(r, ""), "-")
	var items *itemStore
	if req.Store == nil || *req.Store {
		items = &s.items
	}
	return &responsesCall{st: st, id: "resp_" + base, base: base, model: model, created: time.Now().Unix(),
		req: req, g: g, reply: s.newReplyParser(plan), live: s.reasoningParser() == nil, items: items}, nil
}

// object is the response object with the request's settings, in the given status.
func (rc *responsesCall) object(status string, output []api.ResponseItem) *api.Response {
	req := rc.req
	resp := &api.Response{ID: rc.id, Object: "response", CreatedAt: rc.created, Status: status, Model: rc.model,
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Output: output,
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		Temperature:       rc.g.params.Temperature, TopP: rc.g.params.TopP,
		Text:       api.ResponseTextConfig{Format: api.ResponseTextFormat{Type: "text"}},
		ToolChoice: json.RawMessage(`"auto"`), Tools: json.RawMessage(`[]`), Truncation: "disabled",
		Metadata: req.Metadata, Store: rc.items != nil}
	if output == nil {
		resp.Output = []api.ResponseItem{}
	}
	if req.Text != nil && req.Text.Format.Type != "" {
		resp.Text = *req.Text
	}
	if present(req.ToolChoice) {
		resp.ToolChoice = req.ToolChoice
	}
	if present(req.Tools) {
		resp.Tools = req.Tools
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	return resp
}

func outputText(text string) api.OutputContent {
	return api.OutputContent{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// status is the response's status once the engine is done.
func (rc *responsesCall) status(last engine.Output) string {
	if last.FinishReason == engine.FinishLength {
		return "incomplete"
	}
	return "completed"
}

// final is the finished response object for the whole text and the last Output.
func (rc *responsesCall) final(text string, last engine.Output) *api.Response {
	return rc.respond(rc.replyItems(text, rc.status(last)), last)
}

// respond is the finished response object with the given output items, which are kept for
// item_reference (store true).
func (rc *responsesCall) respond(output []api.ResponseItem, last engine.Output) *api.Response {
	status := rc.status(last)
	resp := rc.object(status, output)
	if status == "incomplete" {
		resp.IncompleteDetails = &api.IncompleteDetails{Reason: "max_output_tokens"}
	}
	if rc.items != nil {
		rc.items.put(resp.Output)
	}
	resp.Usage = &api.ResponseUsage{InputTokens: last.PromptTokens, OutputTokens: last.OutputTokens,
		TotalTokens:        last.PromptTokens + last.OutputTokens,
		InputTokensDetails: api.InputTokensDetails{CachedTokens: last.CachedTokens}}
	return resp
}

func itoa(i int) string { return strconv.Itoa(i) }
