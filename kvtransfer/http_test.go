package kvtransfer

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestFetchOverHTTP: a real HTTP server streams the exporter's blocks; Fetch returns them and
// both sides count bytes and blocks. An exporter error, a body cut in the middle and a producer
// that is gone are Fetch errors, counted as failures.
func TestFetchOverHTTP(t *testing.T) {
	blocks := testBlocks(20, 3)
	var gotPrompt []int
	var gotSalt string
	cut := false
	exp := func(ctx context.Context, prompt []int, salt string) ([][]byte, error) {
		gotPrompt, gotSalt = prompt, salt
		if salt == "fail" {
			return nil, errors.New("no engine")
		}
		return blocks, nil
	}
	prodM := NewMetrics(prometheus.NewRegistry())
	h := Handler(testLayout, exp, prodM)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ExportPath {
			http.NotFound(w, r)
			return
		}
		if cut {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			w.Header().Set("Content-Type", ContentType)
			w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	consM := NewMetrics(prometheus.NewRegistry())
	ctx := context.Background()
	got, err := Fetch(ctx, srv.Client(), srv.URL, "", []int{1, 2, 3}, "s", testLayout, consM)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(blocks) || !bytes.Equal(got[19], blocks[19]) || len(gotPrompt) != 3 || gotSalt != "s" {
		t.Fatalf("fetched %d blocks; exporter saw %v %q", len(got), gotPrompt, gotSalt)
	}
	wantBytes := float64(len(encode(t, testLayout, blocks)))
	if b := testutil.ToFloat64(consM.bytes.WithLabelValues(Received)); b != wantBytes {
		t.Errorf("received bytes %v, want %v", b, wantBytes)
	}
	if b := testutil.ToFloat64(prodM.bytes.WithLabelValues(Sent)); b != wantBytes {
		t.Errorf("sent bytes %v, want %v", b, wantBytes)
	}
	if n := testutil.ToFloat64(consM.blocks.WithLabelValues(Received)); n != 20 {
		t.Errorf("received blocks %v", n)
	}

	if _, err := Fetch(ctx, srv.Client(), srv.URL, "", []int{1}, "fail", testLayout, consM); err == nil || !strings.Contains(err.Error(), "no engine") {
		t.Errorf("exporter error: %v", err)
	}
	cut = true
	if _, err := Fetch(ctx, srv.Client(), srv.URL, "", []int{1}, "", testLayout, consM); err == nil || !strings.Contains(err.Error(), "block") {
		t.Errorf("cut body: %v", err)
	}
	srv.Close()
	if _, err := Fetch(ctx, srv.Client(), srv.URL, "", []int{1}, "", testLayout, consM); err == nil {
		t.Error("fetched from a closed server")
	}
	if _, err := Fetch(ctx, nil, "file:///etc/passwd", "", []int{1}, "", testLayout, consM); err == nil {
		t.Error("fetched from a file URL")
	}
	if f := testutil.ToFloat64(consM.failures.WithLabelValues(Received)); f != 4 {
		t.Errorf("received failures %v, want 4", f)
	}
	if f := testutil.ToFloat64(prodM.failures.WithLabelValues(Sent)); f != 1 {
		t.Errorf("sent failures %v, want 1", f)
	}
}
