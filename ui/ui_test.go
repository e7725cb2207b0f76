package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestPageCarriesMode(t *testing.T) {
	mux := http.NewServeMux()
	Mount(mux, Options{Mode: ModeRouter})
	code, body := get(t, mux, "/")
	if code != 200 || !strings.Contains(body, `<meta name="llmcloud-mode" content="router">`) {
		t.Fatalf("GET / = %d, mode meta missing:\n%s", code, body)
	}
	if code, _ := get(t, mux, "/ui/app.js"); code != 200 {
		t.Fatalf("GET /ui/app.js = %d", code)
	}
	if code, _ := get(t, mux, "/ui/nope.js"); code != 404 {
		t.Fatalf("GET /ui/nope.js = %d, want 404", code)
	}
}
