// This file serves run-time LoRA adapters as vLLM does with --enable-lora: a request's model
// may name a loaded adapter (its tokens then run with the adapter on the base model, batched
// with every other request), /v1/models lists the adapters with parent = the base model's
// name, and POST /v1/load_lora_adapter {lora_name, lora_path} and /v1/unload_lora_adapter
// {lora_name} load and unload them (200 with a plain-text "Success: ..." as vLLM answers; errors
// in OpenAI's shape: 400 for a bad or duplicate load, a rank above --max-lora-rank or an
// adapter for another base; 404 for an unknown name).
package server

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/llmcloud/llmcloud/api"

	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/model"
)

// adapterOf returns the id of the loaded adapter called name, 0 if none.
func (st *state) adapterOf(name string) uint32 {
	if st.lora == nil || name == "" {
		return 0
	}
	if e, ok := st.lora.Lookup(name); ok {
		return e.ID
	}
	return 0
}

// adapterModels lists the loaded adapters as /v1/models entries.
func (s *Server) adapterModels(st *state) []api.Model {
	if st.lora == nil {
		return nil
	}
	var out []api.Model
	for _, e := range st.lora.List() {
		out = append(out, api.Model{ID: e.Name, Object: "model", Created: s.started, OwnedBy: "llmcloud",
			Root: e.Path, Parent: st.name, MaxModelLen: st.maxModelLen})
	}
	return out
}

func (s *Server) routeLoRA() {
	if s.opts.LoRA == nil {
		off := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "lora_disabled", "", "LoRA adapters are off: start serve with --enable-lora to use "+r.URL.Path)
		})
		s.route("POST", "/v1/load_lora_adapter", off)
		s.route("POST", "/v1/unload_lora_adapter", off)
		return
	}
	s.route("POST", "/v1/load_lora_adapter", s.needModel(s.handleLoadLoRA))
	s.route("POST", "/v1/unload_lora_adapter", s.needModel(s.handleUnloadLoRA))
}

type loraRequest struct {
	Name string `json:"lora_name"`
	Path string `json:"lora_path"`
}

func (s *Server) handleLoadLoRA(w http.ResponseWriter, r *http.Request, st *state) {
	var req loraRequest
	body, e := readBody(r)
	if e == nil {
		e = unmarshalBody(body, &req)
	}
	if e != nil {
		s.fail(w, e)
		return
	}
	if req.Name == "" || req.Path == "" {
		s.fail(w, badRequest("lora_name", "both 'lora_name' and 'lora_path' must be provided"))
		return
	}
	if req.Name == st.name || st.adapterOf(req.Name) != 0 {
		s.fail(w, badRequest("lora_name", "the lora adapter %q has already been loaded", req.Name))
		return
	}
	if _, e := LoadAdapter(st.lora, st.b.Model, req.Name, req.Path); e != nil {
		s.fail(w, badRequest("lora_path", "%v", e))
		return
	}
	s.log.Info("loaded LoRA adapter", "name", req.Name, "path", req.Path)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
}

func (s *Server) handleUnloadLoRA(w http.ResponseWriter, r *http.Request, st *state) {
	var req loraRequest
	body, e := readBody(r)
	if e == nil {
		e = unmarshalBody(body, &req)
	}
	if e != nil {
		s.fail(w, e)
		return
	}
	if req.Name == "" {
		s.fail(w, badRequest("lora_name", "'lora_name' must be provided"))
		return
	}
	if !st.lora.Remove(req.Name) {
		s.fail(w, &apiError{status: http.StatusNotFound, code: "model_not_found", param: "lora_name",
			msg: fmt.Sprintf("the lora adapter %q cannot be found", req.Name)})
		return
	}
	s.log.Info("unloaded LoRA adapter", "name", req.Name)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", req.Name)
}

// LoadAdapter opens the adapter at path for the base m (checked against its weights) and adds
// it to reg under name.
func LoadAdapter(reg *lora.Registry, m *model.Model, name, path string) (uint32, error) {
	a, err := lora.Open(path, &m.Config, m.Weights)
	if err != nil {
		return 0, err
	}
	a.Name = name
	return reg.Add(name, path, a)
}

// servedNames are the model names a request may ask for: the base's, then the loaded adapters'.
func (st *state) servedNames() []string {
	names := slices.Clone(st.names)
	if st.lora != nil {
		for _, e := range st.lora.List() {
			names = append(names, e.Name)
		}
	}
	return names
}
