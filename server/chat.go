// POST /v1/chat/completions: messages (and tools) rendered through the chat template, then
// generated like a completion; chat-shaped responses, chunks and logprobs.
package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/chattmpl"
	"github.com/llmcloud/llmcloud/engine"
)

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request, st *state) {
	var req api.ChatCompletionRequest
	body, e := readBody(r)
	if e == nil {
		e = unmarshalBody(body, &req)
	}
	if e == nil {
		e = refuseFields(body, generateRefused, chatRefused)
	}
	if e != nil {
		s.fail(w, e)
		return
	}
	model, e := st.checkModel(req.Model)
	if e != nil {
		s.fail(w, e)
		return
	}
	plan, e := s.planTools(&req)
	if e != nil {
		s.fail(w, e)
		return
	}
	top := 0
	if req.TopLogprobs != nil {
		top = *req.TopLogprobs
		if top < 0 || top > 20 {
			s.fail(w, badRequest("top_logprobs", "top_logprobs must be in [0, 20], got %d", top))
			return
		}
		if top > 0 && !req.Logprobs {
			s.fail(w, badRequest("top_logprobs", "top_logprobs needs logprobs: true"))
			return
		}
	}
	maxTok, param := req.MaxCompletionTokens, "max_completion_tokens"
	if maxTok == nil {
		maxTok, param = req.MaxTokens, "max_tokens"
	}
	g, e := s.buildGen(st, &req.SamplingFields, maxTok, param, req.Logprobs, top)
	if e != nil {
		s.fail(w, e)
		return
	}
	g.adapter = st.adapterOf(model)
	if e := refuseBestOf(body, g.n); e != nil {
		s.fail(w, e)
		return
	}
	if g.constraint, e = st.structured(&req.StructuredFields); e != nil {
		s.fail(w, e)
		return
	}
	g.kind = "chat"
	prompt, e := st.renderChat(req.Messages, req.Tools, req.ChatTemplateKwargs,
		req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
	if e != nil {
		s.fail(w, e)
		return
	}
	if plan.ir != nil {
		if g.constraint != nil {
			s.fail(w, badRequest("tool_choice", "a forced tool_choice and a structured output format cannot both constrain one reply"))
			return
		}
		if g.constraint, e = st.toolGrammarConstraint(plan.ir); e != nil {
			s.fail(w, e)
			return
		}
	}
	g.constraint = s.answerOnly(st, g.constraint, prompt)
	g.prompts = [][]int{st.b.Tok.Encode(prompt, false, true)}
	if e := g.checkPrompts(st, "messages"); e != nil {
		s.fail(w, e)
		return
	}
	id := s.respID(r, "chatcmpl")
	outs, e := s.start(r.Context(), st, g, id)
	if e != nil {
		s.fail(w, e)
		return
	}
	created := time.Now().Unix()
	choices := make([]chatChoice, g.n)
	for i := range choices {
		choices[i].reply = s.newReplyParser(plan)
	}
	usage := func() *api.Usage {
		u := &api.Usage{PromptTokens: choices[0].last.PromptTokens,
			PromptTokensDetails: &api.PromptTokensDetails{CachedTokens: choices[0].last.CachedTokens}}
		for _, c := range choices {
			u.CompletionTokens += c.last.OutputTokens
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		return u
	}
	if !req.Stream {
		for co := range outs {
			choices[co.index].add(st, co.out, req.Logprobs)
		}
		resp := api.ChatCompletionResponse{ID: id, Object: "chat.completion", Created: created, Model: model}
		for i := range choices {
			c := &choices[i]
			if c.last.Err != nil {
				s.fail(w, &apiError{status: http.StatusInternalServerError, code: "engine_error", msg: c.last.Err.Error()})
				return
			}
			msg := c.reply.message(c.text)
			resp.Choices = append(resp.Choices, api.ChatChoice{Index: i,
				Message: msg, Logprobs: c.lp, FinishReason: c.reply.finishReason(c.last.FinishReason)})
		}
		resp.Usage = usage()
		writeJSON(w, http.StatusOK, resp)
		return
	}
	sse := api.NewSSEWriter(w)
	w.WriteHeader(http.StatusOK)
	chunk := func(c api.ChatChunkChoice) api.ChatCompletionChunk {
		return api.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []api.ChatChunkChoice{c}}
	}
	failed := false
	for i := range g.n {
		if sse.Event(chunk(api.ChatChunkChoice{Index: i, Delta: api.ChatDelta{Role: "assistant"}})) != nil {
			failed = true
		}
	}
	for co := range outs {
		o := co.out
		c := &choices[co.index]
		text, lp := c.add(st, o, req.Logprobs)
		deltas := c.reply.feed(text, o.Finished)
		if failed || (len(deltas) == 0 && !o.Finished && len(o.TokenIDs) == 0) {
			continue
		}
		if len(deltas) == 0 {
			deltas = []api.ChatDelta{{}}
		}
		fin := finishPtr(o)
		if fin != nil {
			*fin = c.reply.finishReason(*fin)
		}
		for k, d := range deltas {
			cc := api.ChatChunkChoice{Index: co.index, Delta: d}
			if k == 0 {
				cc.Logprobs = lp
			}
			if k == len(deltas)-1 {
				cc.FinishReason = fin
			}
			if sse.Event(chunk(cc)) != nil {
				failed = true
				break
			}
		}
	}
	if failed {
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		sse.Event(api.ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []api.ChatChunkChoice{}, Usage: usage()})
	}
	sse.Done()
}

// chatChoice accumulates one chat choice.
type chatChoice struct {
	reply *replyParser
	text  string
	lp    *api.ChatLogprobs
	last  engine.Output
}

func (c *chatChoice) add(st *state, o engine.Output, logprobs bool) (string, *api.ChatLogprobs) {
	c.last = o
	c.text += o.Text
	if !logprobs {
		return o.Text, nil
	}
	delta := &api.ChatLogprobs{Content: []api.ChatTokenLogprob{}}
	for _, res := range o.Logprobs {
		t := st.tokenText(res.ID)
		tl := api.ChatTokenLogprob{Token: t, Logprob: res.Logprob, Bytes: bytesOf(t), TopLogprobs: []api.TopLogprob{}}
		for _, alt := range res.Top {
			at := st.tokenText(alt.ID)
			tl.TopLogprobs = append(tl.TopLogprobs, api.TopLogprob{Token: at, Logprob: alt.Logprob, Bytes: bytesOf(at)})
		}
		delta.Content = append(delta.Content, tl)
	}
	if c.lp == nil {
		c.lp = &api.ChatLogprobs{Content: []api.ChatTokenLogprob{}}
	}
	c.lp.Content = append(c.lp.Content, delta.Content...)
	return o.Text, delta
}

// renderChat checks the messages (and tools, and template kwargs) and renders them through
// the chat template.
func (st *state) renderChat(rawMsgs, rawTools, rawKwargs []byte, addGen bool) (string, *apiError) {
	if len(rawMsgs) == 0 {
		return "", badRequest("messages", "messages is required")
	}
	v, err := chattmpl.DecodeJSON(rawMsgs)
	if err != nil {
		return "", badRequest("messages", "messages: %v", err)
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return "", badRequest("messages", "messages must be a non-empty list of message objects")
	}
	for i, m := range list {
		mm, ok := m.(*chattmpl.Map)
		if !ok {
			return "", badRequest(fmt.Sprintf("messages[%d]", i), "messages[%d] is not an object", i)
		}
		role, _ := mm.Get("role")
		if rs, ok := role.(string); !ok || rs == "" {
			return "", badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role must be a non-empty string", i)
		}
		if e := normalizeMessage(mm, i); e != nil {
			return "", e
		}
		content, _ := mm.Get("content")
		switch c := content.(type) {
		case nil, string:
		case []any: // content parts: keep the text ones, joined
			var sb strings.Builder
			for j, p := range c {
				pm, ok := p.(*chattmpl.Map)
				if !ok {
					return "", badRequest(fmt.Sprintf("messages[%d].content[%d]", i, j), "messages[%d].content[%d] is not an object", i, j)
				}
				typ, _ := pm.Get("type")
				if typ != "text" {
					return "", badRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j), "messages[%d].content[%d]: only text parts are supported, got type %v", i, j, typ)
				}
				t, _ := pm.Get("text")
				ts, ok := t.(string)
				if !ok {
					return "", badRequest(fmt.Sprintf("messages[%d].content[%d].text", i, j), "messages[%d].content[%d].text must be a string", i, j)
				}
				if sb.Len() > 0 {
					sb.WriteString("\n")
				}
				sb.WriteString(ts)
			}
			mm.Set("content", sb.String())
		default:
			return "", badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content must be a string or a list of parts", i)
		}
	}
	opts := chattmpl.Options{AddGenerationPrompt: addGen}
	if len(rawTools) > 0 && string(rawTools) != "null" {
		tv, err := chattmpl.DecodeJSON(rawTools)
		if err != nil {
			return "", badRequest("tools", "tools: %v", err)
		}
		tl, ok := tv.([]any)
		if !ok {
			return "", badRequest("tools", "tools must be a list")
		}
		opts.Tools = tl
	}
	if len(rawKwargs) > 0 && string(rawKwargs) != "null" {
		kv, err := chattmpl.DecodeJSON(rawKwargs)
		if err != nil {
			return "", badRequest("chat_template_kwargs", "chat_template_kwargs: %v", err)
		}
		km, ok := kv.(*chattmpl.Map)
		if !ok {
			return "", badRequest("chat_template_kwargs", "chat_template_kwargs must be an object")
		}
		opts.Extra = map[string]any{}
		for k, v := range km.Values {
			opts.Extra[k] = v
		}
	}
	voc := st.b.Tok.Vocab()
	if voc.BOS >= 0 && voc.BOS < len(voc.Tokens) {
		opts.BOSToken = voc.Tokens[voc.BOS]
	}
	if voc.EOS >= 0 && voc.EOS < len(voc.Tokens) {
		opts.EOSToken = voc.Tokens[voc.EOS]
	}
	tmpl := st.tmpl
	if tmpl == "" {
		tmpl = chattmpl.PlainTranscript
	}
	out, err := chattmpl.Apply(tmpl, list, opts)
	if err != nil {
		// A template that raises (raise_exception) rejects the conversation: the client's fault.
		return "", badRequest("messages", "chat template: %v", err)
	}
	return out, nil
}
