// routes.go registers the server's endpoints and answers before routing: the API key is
// checked on every /v1 and /console/api path, known or not (401 before 404), and on /tokenize,
// /detokenize and /metrics with ProtectAll (the console's page, / and /ui/, stays open: it asks
// for the key); a known path asked with another method gets 405 with Allow.
package server

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
)

// route registers h for method and path and remembers the method for 405 answers.
func (s *Server) route(method, path string, h http.Handler) {
	s.mux.Handle(method+" "+path, h)
	if s.allow == nil {
		s.allow = map[string][]string{}
	}
	s.allow[path] = append(s.allow[path], method)
	if method == http.MethodGet {
		s.allow[path] = append(s.allow[path], http.MethodHead)
	}
}

// notFound answers paths no pattern matched: 405 with Allow when the path is known under other
// methods, else 404.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if methods, ok := s.allow[r.URL.Path]; ok {
		allow := slices.Clone(methods)
		slices.Sort(allow)
		allow = slices.Compact(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "",
			"method "+r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+strings.Join(allow, ", "))
		return
	}
	writeError(w, http.StatusNotFound, "not_found", "", "no endpoint "+r.Method+" "+r.URL.Path)
}

// protected reports whether path needs the API key.
func (s *Server) protected(path string) bool {
	if path == "/v1" || strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/console/api/") {
		return true
	}
	if s.opts.ProtectAll {
		switch path {
		case "/tokenize", "/detokenize", "/metrics":
			return true
		}
	}
	return false
}

// requireKey answers 401 to a protected path without the key, before any routing.
func (s *Server) requireKey(h http.Handler) http.Handler {
	if s.opts.APIKey == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.protected(r.URL.Path) && !validKey(r.Header.Get("Authorization"), s.opts.APIKey) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			// Close after answering instead of reading an unauthenticated body to its end
			// (a slow one would hold the connection until the read timeout).
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusUnauthorized, "invalid_api_key", "", "invalid or missing API key")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// validKey reports whether an Authorization header carries key with the Bearer scheme, the
// scheme matched case-insensitively (RFC 9110 §11.1).
func validKey(header, key string) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(key)) == 1
}
