// The load generator of the replica scenarios: completions at a fixed rate, alternately streamed
// and not, each classified as succeeded, ended by an SSE error event, failed or hung.
package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// outcome is what became of one request.
type outcome struct {
	at       time.Duration // when it was sent, from the start of the load
	stream   bool
	ok       bool   // 200 and a complete answer ([DONE] for streams)
	errEvent bool   // a stream that ended with a data: {"error":...} event
	hung     bool   // the client timeout expired
	why      string // for failures: status or error
	dur      time.Duration
}

// loadSummary counts outcomes.
type loadSummary struct {
	Sent, NonStreamed, NonStreamedOK, Streamed, StreamedOK, StreamedErrEvent, Failed, Hung int
	Slowest                                                                                time.Duration
	Failures                                                                               []string
}

func (s loadSummary) String() string {
	return fmt.Sprintf("sent %d: non-streamed %d ok of %d; streamed %d complete + %d error events of %d; failed %d; hung %d; slowest %v",
		s.Sent, s.NonStreamedOK, s.NonStreamed, s.StreamedOK, s.StreamedErrEvent, s.Streamed, s.Failed, s.Hung,
		s.Slowest.Round(time.Millisecond))
}

func summarize(outs []outcome) loadSummary {
	var s loadSummary
	for _, o := range outs {
		s.Sent++
		s.Slowest = max(s.Slowest, o.dur)
		switch {
		case o.stream:
			s.Streamed++
		default:
			s.NonStreamed++
		}
		switch {
		case o.ok && o.stream:
			s.StreamedOK++
		case o.ok:
			s.NonStreamedOK++
		case o.errEvent:
			s.StreamedErrEvent++
		default:
			s.Failed++
			if o.hung {
				s.Hung++
			}
			if len(s.Failures) < 10 {
				s.Failures = append(s.Failures, fmt.Sprintf("at %v stream=%v: %s", o.at.Round(time.Millisecond), o.stream, o.why))
			}
		}
	}
	return s
}

// runLoad sends rate requests a second to base for d, alternately streamed and not, each with a
// client timeout; at runs (once, in its own goroutine, awaited) when the load is after old.
func runLoad(base string, rate int, d, timeout time.Duration, after time.Duration, at func()) []outcome {
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	var (
		mu   sync.Mutex
		outs []outcome
		wg   sync.WaitGroup
	)
	start := time.Now()
	n := int(d.Seconds() * float64(rate))
	fired := false
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		if !fired && at != nil && time.Since(start) >= after {
			fired = true
			wg.Add(1)
			go func() { defer wg.Done(); at() }()
		}
		wg.Add(1)
		go func(stream bool) {
			defer wg.Done()
			o := complete(client, base, stream)
			o.at = time.Since(start) - o.dur
			mu.Lock()
			outs = append(outs, o)
			mu.Unlock()
		}(i%2 == 1)
	}
	wg.Wait()
	return outs
}

// complete sends one small completion and classifies the answer.
func complete(client *http.Client, base string, stream bool) (o outcome) {
	o.stream = stream
	t0 := time.Now()
	defer func() { o.dur = time.Since(t0) }()
	// Streams are long enough (~60 ms here) to be cut mid-way by a kill; answers are short.
	// Streams of 300 tokens put the two surviving replicas near their capacity on a CI machine
	// about 3x slower than this one: the queue then grew for the rest of the load and streams
	// took longer than the client timeout though none had stopped (128 tokens leave ~7x).
	tokens := 24
	if stream {
		tokens = 128
	}
	body := fmt.Sprintf(`{"prompt":"Once upon a time","max_tokens":%d,"stream":%v}`, tokens, stream)
	resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		o.hung, o.why = isTimeout(err), err.Error()
		return o
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		o.why = fmt.Sprintf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
		return o
	}
	if !stream {
		var v struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			o.hung, o.why = isTimeout(err), "body: "+err.Error()
			return o
		}
		o.ok = len(v.Choices) == 1
		if !o.ok {
			o.why = "no choices"
		}
		return o
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			o.ok = true
		case strings.HasPrefix(line, `data: {"error"`):
			o.errEvent, o.why = true, line
		}
	}
	if err := sc.Err(); err != nil && !o.ok && !o.errEvent {
		o.hung, o.why = isTimeout(err), "stream: "+err.Error()
	} else if !o.ok && !o.errEvent {
		o.why = "stream ended without [DONE] or an error event"
	}
	return o
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		strings.Contains(err.Error(), "Client.Timeout")
}

// logLoad prints the summary and the first failures.
func logLoad(t *testing.T, name string, s loadSummary) {
	t.Helper()
	t.Logf("%s: %v", name, s)
	for _, f := range s.Failures {
		t.Logf("  failure %s", f)
	}
}
