// Package ui serves the web console: a chat playground, a live view of the cloud, and viewers
// for benchmark results and training runs (docs/console.md). The pages are plain HTML, CSS and
// JavaScript modules embedded in the binary with go:embed: no build step, no CDN, so `go build`
// alone gives the console.
//
// The console reads only what the process already serves (/v1/*, /metrics) plus the JSON
// endpoints under /console/api/ that serve, router, up and `llmcloud ui` add; it holds no
// state of its own on the server.
package ui

import (
	"bytes"
	"embed"
	"html"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Mode says which process serves the console, so the page opens on the view that fits it.
type Mode string

// The processes that serve the console.
const (
	ModeServe  Mode = "serve"  // one replica: the playground first
	ModeRouter Mode = "router" // a router in front of replicas: the cloud view first
	ModeUp     Mode = "up"     // a whole local cloud (supervisor, router, autoscaler)
	ModeTrain  Mode = "train"  // a training run (`train --ui`, `llmcloud ui RUN`)
)

// Options configure Handler.
type Options struct {
	// Mode is the serving process; the page reads it from <meta name="llmcloud-mode">.
	Mode Mode
}

// Handler serves the console: the page at GET / and its assets under GET /ui/. Mount it on the
// patterns "GET /{$}" and "GET /ui/" so every other path keeps its own handler.
func Handler(opts Options) http.Handler {
	assets, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	page, err := fs.ReadFile(assets, "index.html")
	if err != nil {
		panic(err)
	}
	mode := opts.Mode
	if mode == "" {
		mode = ModeServe
	}
	page = bytes.Replace(page, []byte(`content="serve"`), []byte(`content="`+html.EscapeString(string(mode))+`"`), 1)
	files := http.StripPrefix("/ui/", http.FileServerFS(assets))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			w.Write(page)
		case strings.HasPrefix(r.URL.Path, "/ui/"):
			w.Header().Set("Cache-Control", "no-cache")
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// Mount registers Handler on mux at "GET /{$}" and "GET /ui/".
func Mount(mux *http.ServeMux, opts Options) {
	h := Handler(opts)
	mux.Handle("GET /{$}", h)
	mux.Handle("GET /ui/", h)
}
