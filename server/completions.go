// POST /v1/completions: prompts (text or token ids, one or many), n choices each, echo,
// legacy logprobs; streamed as text_completion chunks or returned whole.
package server

import (
	"net/http"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/engine"
)

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request, st *state) {
	var req api.CompletionRequest
	body, e := readBody(r)
	if e == nil {
		e = unmarshalBody(body, &req)
	}
	if e == nil {
		e = refuseFields(body, generateRefused, completionsRefused)
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
	top := 0
	if req.Logprobs != nil {
		top = *req.Logprobs
	}
	g, e := s.buildGen(st, &req.SamplingFields, req.MaxTokens, "max_tokens", req.Logprobs != nil, top)
	if e != nil {
		s.fail(w, e)
		return
	}
	g.adapter = st.adapterOf(model)
	g.kind = "cmpl"
	if e := refuseBestOf(body, g.n); e != nil {
		s.fail(w, e)
		return
	}
	if g.constraint, e = st.structured(&req.StructuredFields); e != nil {
		s.fail(w, e)
		return
	}
	texts, ids, err := api.Prompts(req.Prompt)
	if err != nil {
		s.fail(w, badRequest("prompt", "%v", err))
		return
	}
	for _, t := range texts {
		g.prompts = append(g.prompts, st.b.Tok.Encode(t, req.AddSpecialTokens == nil || *req.AddSpecialTokens, true))
	}
	if ids != nil {
		g.prompts = ids
	}
	if e := g.checkPrompts(st, "prompt"); e != nil {
		s.fail(w, e)
		return
	}
	echo := make([]string, len(g.prompts))
	if req.Echo {
		for i := range g.prompts {
			if texts != nil {
				echo[i] = texts[i]
			} else {
				echo[i] = st.b.Tok.Decode(g.prompts[i])
			}
		}
	}
	id := s.respID(r, "cmpl")
	outs, e := s.start(r.Context(), st, g, id)
	if e != nil {
		s.fail(w, e)
		return
	}
	created := time.Now().Unix()
	total := len(g.prompts) * g.n
	choices := make([]cmplChoice, total)
	for i := range choices {
		choices[i].echo = echo[i/g.n]
		choices[i].logprobs = req.Logprobs != nil
	}
	usage := func() *api.Usage {
		u := &api.Usage{}
		cached := 0
		for i, c := range choices {
			if i%g.n == 0 {
				u.PromptTokens += c.last.PromptTokens
				cached += c.last.CachedTokens
			}
			u.CompletionTokens += c.last.OutputTokens
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		u.PromptTokensDetails = &api.PromptTokensDetails{CachedTokens: cached}
		return u
	}
	if !req.Stream {
		for co := range outs {
			choices[co.index].add(st, co.out)
		}
		resp := api.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: model}
		for i := range choices {
			c := &choices[i]
			if c.last.Err != nil {
				s.fail(w, &apiError{status: http.StatusInternalServerError, code: "engine_error", msg: c.last.Err.Error()})
				return
			}
			fr := c.last.FinishReason
			resp.Choices = append(resp.Choices, api.CompletionChoice{Index: i, Text: c.echo + c.text,
				Logprobs: c.lp, FinishReason: &fr})
		}
		resp.Usage = usage()
		writeJSON(w, http.StatusOK, resp)
		return
	}
	sse := api.NewSSEWriter(w)
	w.WriteHeader(http.StatusOK)
	failed := false
	for co := range outs {
		c := &choices[co.index]
		o := co.out
		text, lp := c.add(st, o)
		if failed || (text == "" && !o.Finished && len(o.TokenIDs) == 0) {
			continue
		}
		chunk := api.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: model,
			Choices: []api.CompletionChoice{{Index: co.index, Text: text, Logprobs: lp, FinishReason: finishPtr(o)}}}
		if sse.Event(chunk) != nil {
			failed = true // the client is gone: its context aborts the engine requests
		}
	}
	if failed {
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		sse.Event(api.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: model,
			Choices: []api.CompletionChoice{}, Usage: usage()})
	}
	sse.Done()
}

// cmplChoice accumulates one completion choice.
type cmplChoice struct {
	echo     string
	echoed   bool
	logprobs bool
	text     string
	lp       *api.CompletionLogprobs
	offset   int
	last     engine.Output
}

// add takes the next Output and returns what it adds: text (with the echo before the first
// piece) and its logprobs.
func (c *cmplChoice) add(st *state, o engine.Output) (string, *api.CompletionLogprobs) {
	c.last = o
	text := o.Text
	if !c.echoed {
		c.echoed = true
		text = c.echo + text
		c.offset = len(c.echo)
	}
	c.text += o.Text
	if !c.logprobs {
		return text, nil
	}
	delta := &api.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []*float64{},
		TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, res := range o.Logprobs {
		t := st.tokenText(res.ID)
		lp := res.Logprob
		top := map[string]float64{}
		for _, tl := range res.Top {
			top[st.tokenText(tl.ID)] = tl.Logprob
		}
		delta.Tokens = append(delta.Tokens, t)
		delta.TokenLogprobs = append(delta.TokenLogprobs, &lp)
		delta.TopLogprobs = append(delta.TopLogprobs, top)
		delta.TextOffset = append(delta.TextOffset, c.offset)
		c.offset += len(t)
	}
	if c.lp == nil {
		c.lp = &api.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []*float64{},
			TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	}
	c.lp.Tokens = append(c.lp.Tokens, delta.Tokens...)
	c.lp.TokenLogprobs = append(c.lp.TokenLogprobs, delta.TokenLogprobs...)
	c.lp.TopLogprobs = append(c.lp.TopLogprobs, delta.TopLogprobs...)
	c.lp.TextOffset = append(c.lp.TextOffset, delta.TextOffset...)
	return text, delta
}
