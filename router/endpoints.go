// The router's HTTP handler: its own endpoints (GET/HEAD /health, /metrics, /router/status;
// other methods get 405 with Allow) and everything else to the proxy (proxy.go).

package router

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"

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
	mux.HandleFunc("/", r.serveProxy)
	return mux
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
