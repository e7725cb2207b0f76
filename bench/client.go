// Client: one streamed request to an OpenAI-compatible server, timed chunk by chunk.

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Output is what one request gave. Times are from Start, taken just before the request is
// written.
type Output struct {
	Success       bool
	Error         string
	PromptTokens  int // from the dataset
	OutputTokens  int // from the usage chunk, else counted (see Client.Count)
	UsageTokens   bool
	CachedTokens  int // prompt tokens the server's prefix cache supplied (its usage chunk; 0 if none said)
	GeneratedText string
	Scheduled     time.Time       // when the arrival process wanted it sent
	Start         time.Time       // when it was sent
	TTFT          time.Duration   // to the first content chunk
	ITL           []time.Duration // gaps between content chunks
	Latency       time.Duration   // to the last content chunk
	End           time.Time       // when Do returned
}

// Client sends requests to one server endpoint.
type Client struct {
	URL        string // base URL + endpoint
	Chat       bool   // /v1/chat/completions body and deltas
	Model      string
	IgnoreEOS  bool
	Temp       float64
	Extra      map[string]any // more body fields
	HTTP       *http.Client
	Count      func(text string) int // output tokens when the server sends no usage (nil: content chunks)
	RequestIDs bool                  // send X-Request-Id: bench-<n> (tests match server-side timings)
}

// NewHTTPClient returns an http.Client tuned for a load generator: keep-alive connections without
// a per-host cap on idle ones (Go's default of 2 would reconnect under concurrency), no gzip, and
// a whole-request timeout (0 = none).
func NewHTTPClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 65536,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     16 << 10,
		ReadBufferSize:      16 << 10,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// completionsBody and chatBody are the request bodies (struct fields encode in this order).
type completionsBody struct {
	Model         string        `json:"model"`
	Prompt        string        `json:"prompt"`
	MaxTokens     int           `json:"max_tokens"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
	Temperature   float64       `json:"temperature"`
	IgnoreEOS     bool          `json:"ignore_eos,omitempty"`
}

type chatBody struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	StreamOptions       streamOptions `json:"stream_options"`
	Temperature         float64       `json:"temperature"`
	IgnoreEOS           bool          `json:"ignore_eos,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// body builds the JSON request: a struct (no reflection over maps), or with Extra fields a map
// in which they override ours.
func (c *Client) body(r Request) ([]byte, error) {
	so := streamOptions{IncludeUsage: true}
	var v any
	if c.Chat {
		v = &chatBody{Model: c.Model, Messages: []chatMessage{{Role: "user", Content: r.Prompt}},
			MaxCompletionTokens: r.OutputTokens, Stream: true, StreamOptions: so, Temperature: c.Temp, IgnoreEOS: c.IgnoreEOS}
	} else {
		v = &completionsBody{Model: c.Model, Prompt: r.Prompt, MaxTokens: r.OutputTokens, Stream: true,
			StreamOptions: so, Temperature: c.Temp, IgnoreEOS: c.IgnoreEOS}
	}
	if len(c.Extra) == 0 {
		return json.Marshal(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, x := range c.Extra {
		m[k] = x
	}
	return json.Marshal(m)
}

// sseChunk is the part of a completions or chat completions chunk the benchmark reads.
type sseChunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Do sends r and reads the stream to [DONE]. It never returns an error: failures (connection,
// HTTP status, malformed chunk, stream cut before [DONE], ctx cancelled) are in out.Error.
func (c *Client) Do(ctx context.Context, r Request, id int) (out Output) {
	out.PromptTokens = r.PromptTokens
	defer func() {
		if out.End.IsZero() {
			out.End = time.Now()
		}
	}()
	body, err := c.body(r)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	// A server may close an idle kept-alive connection just as the client reuses it (seen
	// with llama-server: the POST fails with EOF before the server read it). Marking the
	// request idempotent lets net/http resend it on a fresh connection in exactly that case
	// (nothing was written back); a nil value means the header itself is not sent.
	req.Header["X-Idempotency-Key"] = nil
	if c.RequestIDs {
		req.Header.Set("X-Request-Id", "bench-"+strconv.Itoa(id))
	}
	out.Start = time.Now()
	resp, err := c.HTTP.Do(req)
	if err != nil {
		out.Error = describe(ctx, err)
		return out
	}
	drain := true // after [DONE] or an error status; not after a broken stream
	defer func() {
		out.End = time.Now()
		// Read the response to its end before closing it: net/http puts a connection back in
		// the pool only at the body's EOF, and a server writes the chunked terminator just
		// after [DONE], so closing on [DONE] dropped about one connection in eight and the
		// next request paid for a new one. A server that sends more than drainLimit after
		// [DONE] gets its connection closed.
		if drain {
			io.CopyN(io.Discard, resp.Body, drainLimit)
		}
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		out.Error = httpFailure(resp.StatusCode, msg)
		return out
	}
	err = c.read(resp.Body, &out)
	switch {
	case err != nil:
		out.Error = describe(ctx, err)
		drain = false
	case out.TTFT == 0:
		out.Error = "no content chunk in the stream"
	default:
		out.Success = true
		if !out.UsageTokens {
			if c.Count != nil {
				out.OutputTokens = c.Count(out.GeneratedText)
			} else {
				out.OutputTokens = len(out.ITL) + 1
			}
		}
	}
	return out
}

// drainLimit is how much of a response after [DONE] (or an error body) is read to keep the
// connection.
const drainLimit = 64 << 10

// describe names a transport error, marking errors caused by cancellation as interrupted.
func describe(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "interrupted: " + err.Error()
	}
	return err.Error()
}

// readers recycles stream readers (one per request in flight).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// read parses the event stream into out, timing content chunks.
func (c *Client) read(body io.Reader, out *Output) error {
	br := readers.Get().(*bufio.Reader)
	br.Reset(body)
	defer func() { br.Reset(nil); readers.Put(br) }()
	var sb strings.Builder
	var last time.Time
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if err != nil && (err != io.EOF || len(line) == 0) {
			if err == io.EOF {
				return errors.New("stream ended before [DONE]")
			}
			return err
		}
		now := time.Now()
		line = bytes.TrimRight(line, "\r\n")
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			if err == io.EOF {
				return errors.New("stream ended before [DONE]")
			}
			continue // blank line, comment, event: or id: field
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			out.GeneratedText = sb.String()
			return nil
		}
		var ch sseChunk
		if jerr := json.Unmarshal(data, &ch); jerr != nil {
			return fmt.Errorf("malformed chunk %.80q: %v", data, jerr)
		}
		if ch.Error != nil {
			return fmt.Errorf("server error in stream: %s", ch.Error.Message)
		}
		if len(ch.Choices) > 0 {
			var text string
			if c0 := ch.Choices[0]; c0.Text != nil {
				text = *c0.Text
			} else {
				text = c0.Delta.Content + c0.Delta.ReasoningContent + c0.Delta.Reasoning
			}
			if text != "" {
				if out.TTFT == 0 {
					out.TTFT = max(now.Sub(out.Start), 1)
				} else {
					out.ITL = append(out.ITL, now.Sub(last))
				}
				last = now
				out.Latency = now.Sub(out.Start)
				sb.WriteString(text)
			}
		}
		if ch.Usage != nil {
			out.OutputTokens = ch.Usage.CompletionTokens
			out.UsageTokens = true
			if d := ch.Usage.PromptTokensDetails; d != nil {
				out.CachedTokens = d.CachedTokens
			}
		}
		if err == io.EOF {
			return errors.New("stream ended before [DONE]")
		}
	}
}
