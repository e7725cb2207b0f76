// POST /tokenize and POST /detokenize (vLLM's extensions).
package server

import (
	"net/http"

	"github.com/llmcloud/llmcloud/api"
)

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request, st *state) {
	var req api.TokenizeRequest
	if e := decodeBody(r, &req); e != nil {
		s.fail(w, e)
		return
	}
	if _, e := st.checkModel(req.Model); e != nil {
		s.fail(w, e)
		return
	}
	var ids []int
	switch {
	case req.Prompt != nil && len(req.Messages) > 0:
		s.fail(w, badRequest("prompt", "give prompt or messages, not both"))
		return
	case req.Prompt != nil:
		ids = st.b.Tok.Encode(*req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens, true)
	case len(req.Messages) > 0:
		prompt, e := st.renderChat(req.Messages, req.Tools, req.ChatTemplateKwargs, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
		if e != nil {
			s.fail(w, e)
			return
		}
		ids = st.b.Tok.Encode(prompt, req.AddSpecialTokens != nil && *req.AddSpecialTokens, true)
	default:
		s.fail(w, badRequest("prompt", "prompt or messages is required"))
		return
	}
	if ids == nil {
		ids = []int{}
	}
	writeJSON(w, http.StatusOK, api.TokenizeResponse{Count: len(ids), MaxModelLen: st.maxModelLen, Tokens: ids})
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request, st *state) {
	var req api.DetokenizeRequest
	if e := decodeBody(r, &req); e != nil {
		s.fail(w, e)
		return
	}
	if _, e := st.checkModel(req.Model); e != nil {
		s.fail(w, e)
		return
	}
	vocab := st.b.Tok.VocabSize()
	for _, id := range req.Tokens {
		if id < 0 || id >= vocab {
			s.fail(w, badRequest("tokens", "token id %d is outside the vocabulary [0, %d)", id, vocab))
			return
		}
	}
	writeJSON(w, http.StatusOK, api.DetokenizeResponse{Prompt: st.b.Tok.Decode(req.Tokens)})
}
