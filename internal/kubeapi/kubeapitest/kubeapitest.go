// Package kubeapitest is a small Kubernetes API server for tests, over real HTTP (httptest):
// namespaced collections of JSON objects with resourceVersions, list with equality label
// selectors, watch streams (with bookmarks, server timeouts and 410 Gone after Expire), get,
// and a Deployment's scale subresource (GET and PUT with resourceVersion checks, as the API
// server serves it). It speaks the API's JSON and Status errors, so the code under test runs
// its real client. Only tests import this package.
package kubeapitest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is the fake API. Objects live under their collection path, e.g.
// /apis/discovery.k8s.io/v1/namespaces/llm/endpointslices.
type Server struct {
	*httptest.Server
	// Token, if set, is the bearer token every request must carry (else 401).
	Token string
	// Conflicts makes the next scale updates fail with 409 Conflict.
	Conflicts atomic.Int32

	mu       sync.Mutex
	rv       int
	objs     map[string]map[string]map[string]any // collection -> name -> object
	events   []stored
	oldest   int           // watches from before this resourceVersion get 410 Gone
	changed  chan struct{} // closed and replaced on every change
	requests []string
}

type stored struct {
	rv         int
	collection string
	typ        string
	obj        map[string]any
}

// New starts a plain-HTTP server; NewTLS one with httptest's certificate (s.Certificate()).
func New() *Server { return start(false) }

// NewTLS starts an HTTPS server.
func NewTLS() *Server { return start(true) }

func start(tls bool) *Server {
	s := &Server{objs: map[string]map[string]map[string]any{}, changed: make(chan struct{})}
	h := http.HandlerFunc(s.serve)
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	return s
}

// Requests are the "METHOD path" of every request so far (the query left out).
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Put creates or replaces the object (any JSON-marshalable value with metadata.name) in
// collection, giving it the next resourceVersion and telling the watches.
func (s *Server) Put(collection string, obj any) {
	m := toMap(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	name := meta(m)["name"].(string)
	typ := "MODIFIED"
	if _, ok := s.objs[collection][name]; !ok {
		typ = "ADDED"
	}
	s.store(collection, name, typ, m)
}

// Delete removes the object name from collection.
func (s *Server) Delete(collection, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.objs[collection][name]; ok {
		s.store(collection, name, "DELETED", m)
	}
}

// Get returns the stored object (nil if there is none).
func (s *Server) Get(collection, name string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objs[collection][name]
}

// Expire ends every watch with 410 Gone and makes watches from before now get it too, as
// the API server does when its watch cache has moved on: clients must list again.
func (s *Server) Expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	s.oldest = s.rv
	s.events = nil
	close(s.changed)
	s.changed = make(chan struct{})
}

// store is Put and Delete under s.mu.
func (s *Server) store(collection, name, typ string, m map[string]any) {
	s.rv++
	m = clone(m)
	meta(m)["resourceVersion"] = strconv.Itoa(s.rv)
	if s.objs[collection] == nil {
		s.objs[collection] = map[string]map[string]any{}
	}
	if typ == "DELETED" {
		delete(s.objs[collection], name)
	} else {
		s.objs[collection][name] = m
	}
	s.events = append(s.events, stored{rv: s.rv, collection: collection, typ: typ, obj: m})
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	path := r.URL.Path
	if sub, ok := strings.CutSuffix(path, "/scale"); ok {
		i := strings.LastIndexByte(sub, '/')
		s.scale(w, r, sub[:i], sub[i+1:])
		return
	}
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not served here")
		return
	}
	sel, err := parseSelector(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "unable to parse requirement: "+err.Error())
		return
	}
	s.mu.Lock()
	_, isCollection := s.objs[path]
	i := strings.LastIndexByte(path, '/')
	parent, name := path[:i], path[i+1:]
	obj, isObject := s.objs[parent][name]
	s.mu.Unlock()
	switch {
	case isObject && !isCollection:
		writeJSON(w, obj)
	case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
		s.watch(w, r, path, sel)
	default:
		s.list(w, path, sel)
	}
}

func (s *Server) list(w http.ResponseWriter, collection string, sel selector) {
	s.mu.Lock()
	items := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(s.objs[collection])) {
		if o := s.objs[collection][name]; sel.matches(o) {
			items = append(items, o)
		}
	}
	rv := s.rv
	s.mu.Unlock()
	writeJSON(w, map[string]any{"kind": "List", "apiVersion": "v1",
		"metadata": map[string]any{"resourceVersion": strconv.Itoa(rv)}, "items": items})
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request, collection string, sel selector) {
	from, err := strconv.Atoi(r.URL.Query().Get("resourceVersion"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "watch needs a resourceVersion here")
		return
	}
	timeout := 10 * time.Minute
	if t, err := strconv.Atoi(r.URL.Query().Get("timeoutSeconds")); err == nil && t > 0 {
		timeout = time.Duration(t) * time.Second
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	flush()
	end := time.After(timeout)
	for {
		s.mu.Lock()
		if from < s.oldest {
			s.mu.Unlock()
			enc.Encode(map[string]any{"type": "ERROR", "object": map[string]any{"kind": "Status", "apiVersion": "v1",
				"status": "Failure", "reason": "Expired", "code": http.StatusGone,
				"message": fmt.Sprintf("too old resource version: %d (%d)", from, s.oldest)}})
			flush()
			return
		}
		var send []stored
		for _, e := range s.events {
			if e.rv > from && e.collection == collection && sel.matches(e.obj) {
				send = append(send, e)
			}
		}
		last := s.rv
		changed := s.changed
		s.mu.Unlock()
		for _, e := range send {
			enc.Encode(map[string]any{"type": e.typ, "object": e.obj})
		}
		if len(send) > 0 {
			flush()
		}
		from = last
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-end:
			return
		}
	}
}

// scale serves GET and PUT of collection/name/scale for a Deployment-like object
// (spec.replicas).
func (s *Server) scale(w http.ResponseWriter, r *http.Request, collection, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objs[collection][name]
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("deployments.apps %q not found", name))
		return
	}
	spec, _ := obj["spec"].(map[string]any)
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, scaleOf(obj))
	case http.MethodPut:
		var sc struct {
			Metadata struct {
				Name            string `json:"name"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Spec struct {
				Replicas int `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.NewDecoder(r.Body).Decode(&sc); err != nil || sc.Metadata.Name != name {
			writeStatus(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("bad Scale body (%v)", err))
			return
		}
		if s.Conflicts.Load() > 0 {
			s.Conflicts.Add(-1)
			writeStatus(w, http.StatusConflict, "Conflict", "Operation cannot be fulfilled on deployments.apps \""+name+"\": the object has been modified; please apply your changes to the latest version and try again")
			return
		}
		if rv := sc.Metadata.ResourceVersion; rv != "" && rv != meta(obj)["resourceVersion"] {
			writeStatus(w, http.StatusConflict, "Conflict", "Operation cannot be fulfilled on deployments.apps \""+name+"\": stale resourceVersion")
			return
		}
		obj = clone(obj)
		if spec == nil {
			spec = map[string]any{}
		}
		spec = maps.Clone(spec)
		spec["replicas"] = float64(sc.Spec.Replicas)
		obj["spec"] = spec
		s.store(collection, name, "MODIFIED", obj)
		writeJSON(w, scaleOf(s.objs[collection][name]))
	default:
		writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not served here")
	}
}

// Replicas is spec.replicas of the object (-1 if it is missing).
func (s *Server) Replicas(collection, name string) int {
	o := s.Get(collection, name)
	if o == nil {
		return -1
	}
	spec, _ := o["spec"].(map[string]any)
	n, _ := spec["replicas"].(float64)
	return int(n)
}

func scaleOf(obj map[string]any) map[string]any {
	m := meta(obj)
	spec, _ := obj["spec"].(map[string]any)
	n, _ := spec["replicas"].(float64)
	return map[string]any{"kind": "Scale", "apiVersion": "autoscaling/v1",
		"metadata": map[string]any{"name": m["name"], "namespace": m["namespace"], "resourceVersion": m["resourceVersion"]},
		"spec":     map[string]any{"replicas": n}, "status": map[string]any{"replicas": n}}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": msg, "reason": reason, "code": code})
}

func toMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	if _, ok := m["metadata"].(map[string]any); !ok {
		panic("kubeapitest: object without metadata")
	}
	return m
}

func clone(m map[string]any) map[string]any {
	c := maps.Clone(m)
	c["metadata"] = maps.Clone(meta(m))
	return c
}

func meta(m map[string]any) map[string]any { return m["metadata"].(map[string]any) }

// selector is an equality-based label selector: k=v, k==v, k!=v, k, !k, comma-separated
// (set-based requirements are refused as unparsable here).
type selector []func(labels map[string]any) bool

func parseSelector(s string) (selector, error) {
	var sel selector
	if strings.TrimSpace(s) == "" {
		return sel, nil
	}
	for _, req := range strings.Split(s, ",") {
		req = strings.TrimSpace(req)
		var k, v string
		var neg, exists bool
		switch {
		case strings.Contains(req, "!="):
			k, v, _ = strings.Cut(req, "!=")
			neg = true
		case strings.Contains(req, "=="):
			k, v, _ = strings.Cut(req, "==")
		case strings.Contains(req, "="):
			k, v, _ = strings.Cut(req, "=")
		case strings.HasPrefix(req, "!"):
			k, neg, exists = req[1:], true, true
		default:
			k, exists = req, true
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" || strings.ContainsAny(k+v, " ()!=") {
			return nil, fmt.Errorf("%q", req)
		}
		sel = append(sel, func(labels map[string]any) bool {
			got, has := labels[k]
			if exists {
				return has != neg
			}
			return (has && got == v) != neg
		})
	}
	return sel, nil
}

func (sel selector) matches(obj map[string]any) bool {
	labels, _ := meta(obj)["labels"].(map[string]any)
	for _, f := range sel {
		if !f(labels) {
			return false
		}
	}
	return true
}
