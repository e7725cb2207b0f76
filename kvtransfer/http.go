// This file carries transfers over HTTP: the producer answers POST ExportPath with the KV of a
// prompt's cached blocks as one streamed body in the wire format (wire.go), written block by
// block; the consumer's Fetch reads and checks it. The consumer pulls, when the router tells it
// where the prompt was prefilled (SourceHeader), so the producer keeps no state per transfer:
// what it sends is what its prefix cache still holds.

package kvtransfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ExportPath is the producer's endpoint.
const ExportPath = "/v1/kv/export"

// SourceHeader, on a completion request to a consumer, names the base URL of the producer that
// prefilled its prompt (set by the router's pd policy).
const SourceHeader = "X-KV-Transfer-Source"

// HoldHeader, on a completion request to a producer, asks it to keep the prompt's KV when the
// request finishes, for the consumer's export that follows (set by the router's pd policy on
// its prefill request).
const HoldHeader = "X-KV-Transfer-Hold"

// ContentType is the media type of a transfer.
const ContentType = "application/vnd.llmcloud.kv"

// PendingHeader, on a completion request to a consumer (with SourceHeader), says that the
// producer's prefill of the prompt was sent at the same time and may not have finished, or
// even started: the consumer's export asks the producer to wait for it and stream its blocks
// as they are computed (ExportRequest.PrefillPending; set by the router's pd policy unless
// --pd-sequential).
const PendingHeader = "X-KV-Transfer-Pending"

// ExportRequest is the body of POST ExportPath.
type ExportRequest struct {
	PromptTokenIDs []int  `json:"prompt_token_ids"`
	CacheSalt      string `json:"cache_salt,omitempty"`
	// PrefillPending: a held prefill of this prompt (HoldHeader) is on its way to the producer
	// or under way; the producer waits for it (bounded by its --kv-transfer-timeout) and
	// streams each block as soon as the step that computed it has finished.
	PrefillPending bool `json:"prefill_pending,omitempty"`
}

// Exporter returns the KV rows of prompt's cached leading blocks (engine.Engine.ExportKV of the
// base model).
type Exporter func(ctx context.Context, prompt []int, cacheSalt string) ([][]byte, error)

// Source is one export's blocks, possibly handed out as the producer computes them
// (engine.KVStream).
type Source interface {
	// Len is the number of blocks (the header announces it).
	Len() int
	// Buffered is how many blocks Next returns without waiting.
	Buffered() int
	// Next returns the next block, waiting for it; io.EOF after the last.
	Next(ctx context.Context) ([]byte, error)
	// Close releases the source (the reader is done or gone).
	Close()
	// Overlap reports how many blocks were ready before the producer's prefill of the prompt
	// had finished, and when it finished (ok false: no prefill followed, or it had not
	// finished when the last block was taken).
	Overlap() (early int, prefillEnd time.Time, ok bool)
}

// StreamExporter returns the source of an export.
type StreamExporter func(ctx context.Context, req ExportRequest) (Source, error)

// Blocks adapts an Exporter of known blocks.
func Blocks(export Exporter) StreamExporter {
	return func(ctx context.Context, req ExportRequest) (Source, error) {
		b, err := export(ctx, req.PromptTokenIDs, req.CacheSalt)
		if err != nil {
			return nil, err
		}
		return &sliceSource{blocks: b, n: len(b)}, nil
	}
}

type sliceSource struct {
	blocks [][]byte
	n      int
}

func (s *sliceSource) Len() int      { return s.n }
func (s *sliceSource) Buffered() int { return len(s.blocks) }
func (s *sliceSource) Close()        { s.blocks = nil }
func (s *sliceSource) Overlap() (int, time.Time, bool) {
	return 0, time.Time{}, false
}
func (s *sliceSource) Next(context.Context) ([]byte, error) {
	if len(s.blocks) == 0 {
		return nil, io.EOF
	}
	b := s.blocks[0]
	s.blocks = s.blocks[1:]
	return b, nil
}

// flushEvery is how many blocks are written between flushes: the consumer starts reading while
// the rest is still being written. A source that has no block ready is flushed before waiting.
const flushEvery = 8

// Handler answers POST ExportPath for blocks of layout l.
func Handler(l Layout, export StreamExporter, m *Metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "kvtransfer: POST only", http.StatusMethodNotAllowed)
			return
		}
		var req ExportRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&req); err != nil {
			http.Error(w, "kvtransfer: bad export request: "+err.Error(), http.StatusBadRequest)
			return
		}
		start := time.Now()
		src, err := export(r.Context(), req)
		if err != nil {
			m.fail(Sent)
			http.Error(w, "kvtransfer: export: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer src.Close()
		w.Header().Set("Content-Type", ContentType)
		cw := &countingWriter{w: w}
		flusher, _ := w.(http.Flusher)
		err = writeAll(r.Context(), cw, l, src, func() {
			if flusher != nil {
				flusher.Flush()
			}
		})
		if err != nil {
			m.fail(Sent)
			return // the body is cut: the consumer sees a truncated stream
		}
		m.done(Sent, cw.n, src.Len(), time.Since(start))
		early, end, ok := src.Overlap()
		m.overlap(early, end, ok)
	})
}

// writeAll writes one transfer of src's blocks, calling flush every flushEvery blocks and
// whenever src has no block ready.
func writeAll(ctx context.Context, w io.Writer, l Layout, src Source, flush func()) error {
	n := src.Len()
	tw, err := NewWriter(w, l, n)
	if err != nil {
		return err
	}
	dirty := true // the header
	for i := range n {
		if dirty && src.Buffered() == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
			flush()
			dirty = false
		}
		b, err := src.Next(ctx)
		if err != nil {
			return fmt.Errorf("kvtransfer: block %d of %d: %w", i, n, err)
		}
		if err := tw.WriteBlock(b); err != nil {
			return err
		}
		dirty = true
		if (i+1)%flushEvery == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
			flush()
			dirty = false
		}
	}
	return tw.Close()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Fetch asks the producer at base for the KV blocks of layout want of req's prompt. apiKey, when set, is
// sent as a Bearer token. Any failure (no answer, an error status, a truncated or corrupt
// stream, another layout) is an error and counted; the caller then computes the prompt itself.
func Fetch(ctx context.Context, c *http.Client, base, apiKey string, req ExportRequest, want Layout, m *Metrics) ([][]byte, error) {
	start := time.Now()
	blocks, n, err := fetch(ctx, c, base, apiKey, req, want)
	if err != nil {
		m.fail(Received)
		return nil, err
	}
	m.done(Received, n, len(blocks), time.Since(start))
	return blocks, nil
}

func fetch(ctx context.Context, c *http.Client, base, apiKey string, er ExportRequest, want Layout) ([][]byte, int64, error) {
	if c == nil {
		c = http.DefaultClient
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, 0, fmt.Errorf("kvtransfer: source %q is not an http(s) URL", base)
	}
	body, err := json.Marshal(er)
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+ExportPath, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("kvtransfer: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, 0, fmt.Errorf("kvtransfer: POST %s%s: %s: %s", base, ExportPath, resp.Status, bytes.TrimSpace(msg))
	}
	rd, err := NewReader(resp.Body, want)
	if err != nil {
		return nil, 0, err
	}
	blocks := make([][]byte, 0, rd.Len())
	for {
		b, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return blocks, rd.Bytes, nil
		}
		if err != nil {
			return nil, rd.Bytes, err
		}
		blocks = append(blocks, b)
	}
}
