// The router's HTTP handler: its own endpoints (GET/HEAD /health, /metrics, /router/status;
// other methods get 405 with Allow), the console's (console.go, and the page at / with
// Options.UI), and everything else to the proxy (proxy.go); with Options.APIKey, /v1/* and
// /console/api/* need the key.

package router

import (
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/ui"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the proxy (every path but the router's own), GET /health (200 if any backend
// is healthy), GET /metrics (the router's registry) and GET /router/status (Backends as JSON).
func (r *Router) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", r.serveHealth)
	mux.HandleFunc("/health", notAllowed)
	if r.gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(r.gatherer, promhttp.HandlerOpts{}))
		mux.HandleFunc("/metrics", notAllowed)
	}
	mux.HandleFunc("GET /router/status", r.serveStatus)
	mux.HandleFunc("/router/status", notAllowed)
	mux.HandleFunc("GET "+console.CloudPath, r.serveConsoleCloud)
	mux.HandleFunc("GET "+console.RequestsPath, r.serveConsoleRequests)
	if r.opts.UI {
		ui.Mount(mux, ui.Options{Mode: ui.ModeRouter})
	}
	mux.HandleFunc("/", r.serveProxy)
	return RequireKey(r.opts.APIKey, mux)
}

// RequireKey answers 401 to /v1/* and /console/api/* without key (empty key: h itself); up
// puts its own endpoints behind it too.
func RequireKey(key string, h http.Handler) http.Handler {
	if key == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := req.URL.Path
		if (p == "/v1" || strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/console/api/")) &&
			!validKey(req.Header.Get("Authorization"), key) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.Header().Set("Connection", "close")
			console.WriteError(w, http.StatusUnauthorized, "invalid_api_key", "invalid or missing API key")
			return
		}
		h.ServeHTTP(w, req)
	})
}

// validKey reports whether an Authorization header carries key with the Bearer scheme (any case).
func validKey(header, key string) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(key)) == 1
}

// notAllowed answers a method other than GET or HEAD on the router's own endpoints.
func notAllowed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", "GET, HEAD")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusMethodNotAllowed)
	io.WriteString(w, `{"error":{"message":"router: method not allowed","type":"invalid_request_error","code":"method_not_allowed"}}`+"\n")
}

func (r *Router) serveHealth(w http.ResponseWriter, _ *http.Request) {
	n := 0
	for _, b := range r.Backends() {
		if b.Healthy {
			n++
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if n == 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	io.WriteString(w, `{"healthy_backends":`+strconv.Itoa(n)+"}\n")
}

func (r *Router) serveStatus(w http.ResponseWriter, _ *http.Request) {
	b, _ := json.MarshalIndent(struct {
		Policy   string          `json:"policy"`
		Backends []BackendStatus `json:"backends"`
	}{r.opts.Policy, r.Backends()}, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}
