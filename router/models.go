// Model affinity: the router learns from each healthy replica's GET /v1/models (polled with the
// health checks) which models it serves — the base model and its aliases, and with `llmcloud
// serve --enable-lora` (or vLLM) every loaded LoRA adapter — and a request whose "model" names
// one goes only to the replicas listing it; the policy chooses among those. A replica that lists
// nothing (no /v1/models, an empty list, a body that is not a model list) is a wildcard: it may
// serve any model, as before model affinity. A model that no replica lists, with no wildcard
// replica either, is answered 404 in OpenAI's shape, as a single server answers it.

package router

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/llmcloud/llmcloud/api"
)

// errNotModelList marks a /v1/models answer that says the replica lists no models (404, an
// empty list, not a model list): the replica becomes a wildcard. Other errors (timeouts, resets)
// keep the list it had.
type errNotModelList struct{ msg string }

func (e *errNotModelList) Error() string { return e.msg }

// FetchModels GETs baseURL/v1/models and returns the ids it lists, sorted. An answer other
// than a JSON model list, or an empty list, is an error.
func FetchModels(ctx context.Context, c *http.Client, baseURL string) ([]string, error) {
	ids, _, err := fetchModels(ctx, c, baseURL)
	return ids, err
}

// fetchModels is FetchModels, also returning the replica's kv_role (pd.go; "" = none).
func fetchModels(ctx context.Context, c *http.Client, baseURL string) ([]string, string, error) {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/v1/models", nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, "", &errNotModelList{fmt.Sprintf("GET %s/v1/models: %s", baseURL, resp.Status)}
	}
	var list api.ModelList
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return nil, "", &errNotModelList{fmt.Sprintf("GET %s/v1/models: not a model list: %v", baseURL, err)}
	}
	var ids []string
	role := ""
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
		if m.KVRole != "" {
			role = m.KVRole
		}
	}
	if len(ids) == 0 {
		return nil, "", &errNotModelList{fmt.Sprintf("GET %s/v1/models: no models listed", baseURL)}
	}
	slices.Sort(ids)
	return slices.Compact(ids), role, nil
}

// refreshModels polls b's model list (after a good probe) and records it.
func (r *Router) refreshModels(ctx context.Context, b *backend) {
	ids, role, err := fetchModels(ctx, r.probe, b.url)
	if err != nil {
		if _, ok := err.(*errNotModelList); !ok {
			r.log.Debug("router: model list not refreshed", "backend", b.url, "err", err)
			return // transient: keep what it listed
		}
		ids = nil
	}
	r.mu.Lock()
	changed := !b.modelsKnown || !slices.Equal(b.models, ids)
	if role != b.kvRole {
		r.log.Info("router: backend KV role", "backend", b.url, "kv_role", role)
		b.kvRole = role
	}
	if changed {
		b.models, b.modelsKnown = ids, true
		r.recountListing()
	}
	r.mu.Unlock()
	if changed {
		r.log.Info("router: backend models", "backend", b.url, "models", ids)
	}
}

// recountListing counts the backends that list models (r.mu held for writing).
func (r *Router) recountListing() {
	n := int64(0)
	for _, b := range r.backends {
		if b.models != nil {
			n++
		}
	}
	r.listing.Store(n)
}

// lists reports whether b lists model (its list is sorted).
func (b *backend) lists(model string) bool {
	_, ok := slices.BinarySearch(b.models, model)
	return ok
}

// eligible filters the backends (r.mu held) for a request naming model: those listing it;
// when none does, the wildcards (backends listing nothing). Backends whose list is not known
// yet (not probed since they joined) are eligible for every model, as new backends take
// traffic at once. A request naming no model, or any model while no backend lists models, may
// go to every backend (all == true).
func (r *Router) eligible(model string) (match func(*backend) bool, all bool) {
	if model == "" || r.listing.Load() == 0 {
		return nil, true
	}
	for _, b := range r.backends {
		if b.lists(model) {
			return func(b *backend) bool { return !b.modelsKnown || b.lists(model) }, false
		}
	}
	return func(b *backend) bool { return b.models == nil }, false
}

// servedModels is every model the backends list, sorted (for the 404 message).
func (r *Router) servedModels() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, b := range r.backends {
		out = append(out, b.models...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// modelNotFound answers a request for a model no backend serves as a server does: 404,
// invalid_request_error, code model_not_found, param model.
func (r *Router) modelNotFound(w http.ResponseWriter, model string) {
	param := "model"
	msg := fmt.Sprintf("the model %q does not exist (served: %s)", model, strings.Join(r.servedModels(), ", "))
	data, _ := json.Marshal(api.ErrorResponse{Error: api.ErrorBody{Message: msg, Type: "invalid_request_error",
		Param: &param, Code: "model_not_found"}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	w.Write(append(data, '\n'))
	r.m.clientTotal.WithLabelValues("404").Inc()
}
