package kvtransfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
	h := Handler(testLayout, Blocks(exp), prodM)
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
	got, err := Fetch(ctx, srv.Client(), srv.URL, "", ExportRequest{PromptTokenIDs: []int{1, 2, 3}, CacheSalt: "s"}, testLayout, consM)
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

	if _, err := Fetch(ctx, srv.Client(), srv.URL, "", ExportRequest{PromptTokenIDs: []int{1}, CacheSalt: "fail"}, testLayout, consM); err == nil || !strings.Contains(err.Error(), "no engine") {
		t.Errorf("exporter error: %v", err)
	}
	cut = true
	if _, err := Fetch(ctx, srv.Client(), srv.URL, "", ExportRequest{PromptTokenIDs: []int{1}, CacheSalt: ""}, testLayout, consM); err == nil || !strings.Contains(err.Error(), "block") {
		t.Errorf("cut body: %v", err)
	}
	srv.Close()
	if _, err := Fetch(ctx, srv.Client(), srv.URL, "", ExportRequest{PromptTokenIDs: []int{1}, CacheSalt: ""}, testLayout, consM); err == nil {
		t.Error("fetched from a closed server")
	}
	if _, err := Fetch(ctx, nil, "file:///etc/passwd", "", ExportRequest{PromptTokenIDs: []int{1}, CacheSalt: ""}, testLayout, consM); err == nil {
		t.Error("fetched from a file URL")
	}
	if f := testutil.ToFloat64(consM.failures.WithLabelValues(Received)); f != 4 {
		t.Errorf("received failures %v, want 4", f)
	}
	if f := testutil.ToFloat64(prodM.failures.WithLabelValues(Sent)); f != 1 {
		t.Errorf("sent failures %v, want 1", f)
	}
}

// chanSource hands out the blocks sent on ch; an error on fail ends it.
type chanSource struct {
	n      int
	ch     chan []byte
	fail   chan error
	closed chan struct{}
}

func (s *chanSource) Len() int      { return s.n }
func (s *chanSource) Buffered() int { return len(s.ch) }
func (s *chanSource) Close()        { close(s.closed) }
func (s *chanSource) Overlap() (int, time.Time, bool) {
	return 2, time.Now().Add(-time.Second), true
}
func (s *chanSource) Next(ctx context.Context) ([]byte, error) {
	select {
	case b := <-s.ch:
		return b, nil
	case err := <-s.fail:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestHandlerStreams: over real HTTP, a block the source has ready reaches the consumer while
// the source still withholds the next (the handler flushes before it waits), the request's
// prefill_pending reaches the exporter, the overlap is counted, and a source that fails
// mid-way cuts the stream (a consumer error naming the block) and is closed.
func TestHandlerStreams(t *testing.T) {
	blocks := testBlocks(3, 7)
	var src *chanSource
	var pending bool
	m := NewMetrics(prometheus.NewRegistry())
	h := Handler(testLayout, func(ctx context.Context, req ExportRequest) (Source, error) {
		pending = req.PrefillPending
		src = &chanSource{n: 3, ch: make(chan []byte, 3), fail: make(chan error, 1), closed: make(chan struct{})}
		src.ch <- blocks[0]
		return src, nil
	}, m)
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func() *Reader {
		body, _ := json.Marshal(ExportRequest{PromptTokenIDs: []int{1}, PrefillPending: true})
		resp, err := http.Post(srv.URL+ExportPath, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		rd, err := NewReader(resp.Body, testLayout)
		if err != nil {
			t.Fatal(err)
		}
		return rd
	}
	rd := post()
	b, err := rd.Next() // blocks 1 and 2 are not produced yet
	if err != nil || !bytes.Equal(b, blocks[0]) || !pending {
		t.Fatalf("first block before the rest: %v (pending %v)", err, pending)
	}
	src.ch <- blocks[1]
	src.ch <- blocks[2]
	for i := 1; i < 3; i++ {
		if b, err := rd.Next(); err != nil || !bytes.Equal(b, blocks[i]) {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	if _, err := rd.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last block: %v", err)
	}
	<-src.closed
	if n := testutil.ToFloat64(m.early); n != 2 {
		t.Errorf("overlapped blocks %v, want 2", n)
	}
	if n := testutil.CollectAndCount(m.afterPrefill); n != 1 {
		t.Errorf("after-prefill histogram has %d series", n)
	}

	rd = post()
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	src.fail <- errors.New("aborted")
	if _, err := rd.Next(); err == nil || !strings.Contains(err.Error(), "block 1 of 3") {
		t.Errorf("failed source: %v", err)
	}
	<-src.closed
	if f := testutil.ToFloat64(m.failures.WithLabelValues(Sent)); f != 1 {
		t.Errorf("sent failures %v", f)
	}
}
