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

// ExportRequest is the body of POST ExportPath.
type ExportRequest struct {
	PromptTokenIDs []int  `json:"prompt_token_ids"`
	CacheSalt      string `json:"cache_salt,omitempty"`
}

// Exporter returns the KV rows of prompt's cached leading blocks (engine.Engine.ExportKV of the
// base model).
type Exporter func(ctx context.Context, prompt []int, cacheSalt string) ([][]byte, error)

// flushEvery is how many blocks are written between flushes: the consumer starts reading while
// the rest is still being written.
const flushEvery = 8

// Handler answers POST ExportPath for blocks of layout l.
func Handler(l Layout, export Exporter, m *Metrics) http.Handler {
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
		blocks, err := export(r.Context(), req.PromptTokenIDs, req.CacheSalt)
		if err != nil {
			m.fail(Sent)
			http.Error(w, "kvtransfer: export: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		cw := &countingWriter{w: w}
		flusher, _ := w.(http.Flusher)
		err = writeAll(cw, l, blocks, func() {
			if flusher != nil {
				flusher.Flush()
			}
		})
		if err != nil {
			m.fail(Sent)
			return // the body is cut: the consumer sees a truncated stream
		}
		m.done(Sent, cw.n, len(blocks), time.Since(start))
	})
}

// writeAll writes one transfer of blocks, calling flush every flushEvery blocks.
func writeAll(w io.Writer, l Layout, blocks [][]byte, flush func()) error {
	tw, err := NewWriter(w, l, len(blocks))
	if err != nil {
		return err
	}
	for i, b := range blocks {
		if err := tw.WriteBlock(b); err != nil {
			return err
		}
		if (i+1)%flushEvery == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
			flush()
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

// Fetch asks the producer at base for prompt's KV blocks of layout want. apiKey, when set, is
// sent as a Bearer token. Any failure (no answer, an error status, a truncated or corrupt
// stream, another layout) is an error and counted; the caller then computes the prompt itself.
func Fetch(ctx context.Context, c *http.Client, base, apiKey string, prompt []int, cacheSalt string, want Layout, m *Metrics) ([][]byte, error) {
	start := time.Now()
	blocks, n, err := fetch(ctx, c, base, apiKey, prompt, cacheSalt, want)
	if err != nil {
		m.fail(Received)
		return nil, err
	}
	m.done(Received, n, len(blocks), time.Since(start))
	return blocks, nil
}

func fetch(ctx context.Context, c *http.Client, base, apiKey string, prompt []int, cacheSalt string, want Layout) ([][]byte, int64, error) {
	if c == nil {
		c = http.DefaultClient
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, 0, fmt.Errorf("kvtransfer: source %q is not an http(s) URL", base)
	}
	body, err := json.Marshal(ExportRequest{PromptTokenIDs: prompt, CacheSalt: cacheSalt})
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
