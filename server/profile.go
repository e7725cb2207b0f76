// This file is vLLM's profiler switch: with Options.ProfilerDir set, POST /start_profile starts
// recording every engine step (scheduler, engine phases, each op on each kernel worker; package
// profile) and POST /stop_profile stops, writes the Chrome trace-event JSON into the directory
// and answers {"trace": PATH}. Without the directory the endpoints do not exist (404).
package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/profile"
)

// profiler is the state of the profiling endpoints.
type profiler struct {
	dir string
	mu  sync.Mutex
	rec *profile.Recorder // nil: not profiling
	n   int               // traces written
}

func (s *Server) routeProfiler() {
	if s.opts.ProfilerDir == "" {
		// Still 404 (as vLLM answers without its profiler), saying how to turn it on.
		off := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "profiler_disabled", "", "the profiler is off: start serve with --profiler-dir DIR to enable "+r.URL.Path)
		})
		s.route("POST", "/start_profile", off)
		s.route("POST", "/stop_profile", off)
		return
	}
	s.prof = &profiler{dir: s.opts.ProfilerDir}
	s.route("POST", "/start_profile", s.needModel(s.handleStartProfile))
	s.route("POST", "/stop_profile", s.needModel(s.handleStopProfile))
}

func (s *Server) handleStartProfile(w http.ResponseWriter, r *http.Request, st *state) {
	p := s.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rec != nil {
		writeError(w, http.StatusConflict, "profiler_running", "", "the profiler is already running; POST /stop_profile first")
		return
	}
	p.rec = profile.New()
	st.eng.SetProfiler(p.rec)
	s.log.Info("profiler started", "dir", p.dir)
	writeJSON(w, http.StatusOK, map[string]any{"status": "started"})
}

func (s *Server) handleStopProfile(w http.ResponseWriter, r *http.Request, st *state) {
	p := s.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rec == nil {
		writeError(w, http.StatusConflict, "profiler_not_running", "", "the profiler is not running; POST /start_profile first")
		return
	}
	st.eng.SetProfiler(nil)
	rec := p.rec
	p.rec = nil
	p.n++
	path := filepath.Join(p.dir, fmt.Sprintf("llmcloud-trace-%s-%d.json", time.Now().UTC().Format("20060102T150405"), p.n))
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		writeError(w, http.StatusInternalServerError, "profiler_write", "", err.Error())
		return
	}
	if err := rec.WriteTraceFile(path); err != nil {
		writeError(w, http.StatusInternalServerError, "profiler_write", "", err.Error())
		return
	}
	s.log.Info("profiler stopped", "trace", path)
	writeJSON(w, http.StatusOK, map[string]any{"status": "stopped", "trace": path})
}
