// Tests of the transfer overlapped with the producer's prefill (router --policy pd's default):
// real serve replicas and router on loopback sockets, a prompt the producer prefills in many
// chunks (--max-num-batched-tokens 16), greedy outputs compared with one ordinary replica's.
package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/kvtransfer"
)

const pdUsage = `vllm:kv_cache_usage_perc{model_name="synth-llama-3"}`

// TestRouterPDOverlap: through `router --policy pd` (overlapped: the consumer's request is sent
// with the prefill), streamed and plain greedy completions of a prompt prefilled in 44 chunks
// equal one ordinary replica's; the producer had blocks ready for the export while its prefill
// still had prompt tokens to compute (llmcloud:kv_transfer_overlapped_blocks_total, which
// --pd-sequential leaves at zero: there the export starts after the prefill); the consumer
// computed only the prompts' last partial blocks.
func TestRouterPDOverlap(t *testing.T) {
	path := pdModel(t)
	common := []string{path, "--threads", "1", "--batch-invariant"}
	plain, _, _ := startServe(t, common...)
	prod, _, _ := startServe(t, append(common, "--kv-role", "producer", "--max-num-batched-tokens", "16")...)
	cons, _, _ := startServe(t, append(common, "--kv-role", "consumer")...)
	overlapped := `llmcloud:kv_transfer_overlapped_blocks_total`
	// Sequential first: nothing overlaps.
	seq := startRouter(t, 2, "--policy", "pd", "--pd-sequential", "--backend", prod+","+cons)
	pdWarm(t, seq)
	prompt := pdPrompt(700, 50)
	want, _ := pdComplete(t, plain, prompt, 12, false, nil)
	if got, _ := pdComplete(t, seq, prompt, 12, false, nil); got != want {
		t.Fatalf("sequential pd %q, one replica %q", got, want)
	}
	if n := pdMetric(t, prod, overlapped); n != 0 {
		t.Fatalf("sequential pd: %v blocks overlapped", n)
	}
	rt := startRouter(t, 2, "--policy", "pd", "--backend", prod+","+cons)
	pdWarm(t, rt)
	hits0 := pdMetric(t, cons, `vllm:prefix_cache_hits_total{model_name="synth-llama-3"}`)
	for i, stream := range []bool{false, true} {
		prompt := pdPrompt(700, 51+i)
		want, _ := pdComplete(t, plain, prompt, 12, stream, nil)
		if got, _ := pdComplete(t, rt, prompt, 12, stream, nil); got != want {
			t.Fatalf("stream=%v: overlapped pd %q, one replica %q", stream, got, want)
		}
	}
	if h := pdMetric(t, cons, `vllm:prefix_cache_hits_total{model_name="synth-llama-3"}`) - hits0; h < 2*672 {
		t.Errorf("the consumer's prefix hits grew by %v tokens: the transfers were not used", h)
	}
	if n := pdMetric(t, prod, overlapped); n == 0 {
		t.Error("no block was ready before the producer's prefill ended")
	}
	if n := pdMetric(t, prod, `llmcloud:kv_transfer_after_prefill_seconds_count`); n < 3 {
		t.Errorf("%v exports timed after their prefill", n)
	}
	if d := pdWaitMetric(t, rt, `llmcloud_router_pd_requests_total{outcome="disaggregated"}`, 3); d < 3 {
		t.Errorf("disaggregated requests %v", d)
	}
	for _, u := range []string{prod, cons} {
		if f := pdMetric(t, u, pdUsage); f != 0 {
			t.Errorf("%s: KV usage %v after the requests", u, f)
		}
	}
}

// pdWarm sends small requests until the router has disaggregated one (it learns the roles from
// /v1/models after a health probe).
func pdWarm(t *testing.T, rt string) {
	t.Helper()
	series := `llmcloud_router_pd_requests_total{outcome="disaggregated"}`
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		pdComplete(t, rt, "warm up", 2, false, nil)
		if pdWaitMetric(t, rt, series, 1) > 0 {
			return
		}
	}
	t.Fatal("the router disaggregated no request")
}

// TestServePDExportReaderLeaves: a consumer that reads the first blocks of an overlapped
// export, then closes its connection, costs the producer one counted failure and nothing else:
// its prefill completes, it holds no KV block, and the next transfer of the same prompt works.
func TestServePDExportReaderLeaves(t *testing.T) {
	path := pdModel(t)
	common := []string{path, "--threads", "1", "--batch-invariant"}
	prod, _, _ := startServe(t, append(common, "--kv-role", "producer", "--max-num-batched-tokens", "16")...)
	cons, _, _ := startServe(t, append(common, "--kv-role", "consumer")...)
	prompt := pdPrompt(700, 60)
	ids := pdTokenize(t, prod, prompt)
	body, _ := json.Marshal(kvtransfer.ExportRequest{PromptTokenIDs: ids, PrefillPending: true})
	conn, err := net.Dial("tcp", prod[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", prod+kvtransfer.ExportPath, bytes.NewReader(body))
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { // the held prefill, after the export is waiting for it
		time.Sleep(100 * time.Millisecond)
		text, _ := pdComplete(t, prod, prompt, 1, false, map[string]string{kvtransfer.HoldHeader: "1"})
		done <- text
	}()
	var first [20000]byte // the header and the first block
	if _, err := io.ReadFull(conn, first[:]); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	<-done
	if f := pdWaitMetric(t, prod, `llmcloud:kv_transfer_failures_total{direction="sent"}`, 1); f != 1 {
		t.Errorf("sent failures %v, want 1", f)
	}
	if u := pdMetric(t, prod, pdUsage); u != 0 {
		t.Errorf("producer's KV usage %v after the request", u)
	}
	// The same prompt again, through the consumer: served from the producer's prefix cache.
	pdComplete(t, prod, prompt, 1, false, map[string]string{kvtransfer.HoldHeader: "1"})
	want, _ := pdComplete(t, prod, prompt, 8, false, nil)
	got, cached := pdComplete(t, cons, prompt, 8, false, map[string]string{kvtransfer.SourceHeader: prod})
	if got != want || cached < 672 {
		t.Fatalf("after the reader left: %q (cached %d), producer alone %q", got, cached, want)
	}
}

// pdTokenize returns the server's token ids of prompt.
func pdTokenize(t *testing.T, url, prompt string) []int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"prompt": prompt})
	resp, err := http.Post(url+"/tokenize", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Tokens) == 0 {
		t.Fatalf("tokenize: %v (%d tokens)", err, len(out.Tokens))
	}
	return out.Tokens
}

// TestRouterPDProducerKilledMidStream: every connection to the producer is reset (as a killed
// process's would be) once its export has sent a few blocks of an overlapped transfer, in the
// middle of the prefill: the request completes with one ordinary replica's greedy text (the
// consumer computes the prompt), the failure is counted, and neither replica holds a KV block
// afterwards (the producer's aborted prefill freed its blocks).
func TestRouterPDProducerKilledMidStream(t *testing.T) {
	path := pdModel(t)
	common := []string{path, "--threads", "1", "--batch-invariant"}
	plain, _, _ := startServe(t, common...)
	prod, _, _ := startServe(t, append(common, "--kv-role", "producer", "--max-num-batched-tokens", "16")...)
	cons, _, _ := startServe(t, append(common, "--kv-role", "consumer")...)
	kp := newKillingProxy(t, prod[len("http://"):], 40000)
	rt := startRouter(t, 2, "--policy", "pd", "--backend", "http://"+kp.addr+","+cons)
	pdWarm(t, rt)
	prompt := pdPrompt(700, 70)
	want, _ := pdComplete(t, plain, prompt, 8, true, nil)
	kp.arm()
	if got, _ := pdComplete(t, rt, prompt, 8, true, nil); got != want {
		t.Fatalf("producer killed mid-stream: %q, one replica %q", got, want)
	}
	if !kp.killed.Load() {
		t.Fatal("the proxy killed nothing: the export never passed 40000 bytes")
	}
	if f := pdMetric(t, cons, `llmcloud:kv_transfer_failures_total{direction="received"}`); f != 1 {
		t.Errorf("consumer's failures %v, want 1", f)
	}
	for _, u := range []string{prod, cons} {
		if f := pdWaitUsageZero(t, u); f != 0 {
			t.Errorf("%s: KV usage %v after the requests", u, f)
		}
	}
	if n := pdWaitMetric(t, rt, `llmcloud_router_pd_requests_total{outcome="prefill_failed"}`, 1); n != 1 {
		t.Errorf("prefill_failed %v, want 1", n)
	}
}

// pdWaitUsageZero waits up to 5 s for url's KV usage to be 0 (an aborted request frees its
// blocks at the engine's next step boundary).
func pdWaitUsageZero(t *testing.T, url string) float64 {
	t.Helper()
	u := pdMetric(t, url, pdUsage)
	for deadline := time.Now().Add(5 * time.Second); u != 0 && time.Now().Before(deadline); u = pdMetric(t, url, pdUsage) {
		time.Sleep(10 * time.Millisecond)
	}
	return u
}

// killingProxy forwards connections to target; once armed, when one answer has passed limit
// bytes it resets every connection it carries and refuses new ones.
type killingProxy struct {
	addr   string
	limit  int64
	armed  atomic.Bool
	killed atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	ln     net.Listener
}

func newKillingProxy(t *testing.T, target string, limit int64) *killingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kp := &killingProxy{addr: ln.Addr().String(), limit: limit, ln: ln}
	t.Cleanup(func() { kp.kill() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			kp.mu.Lock()
			kp.conns = append(kp.conns, c, u)
			kp.mu.Unlock()
			go io.Copy(u, c)
			go func() {
				var n int64
				buf := make([]byte, 4096)
				for {
					k, err := u.Read(buf)
					if k > 0 {
						if _, werr := c.Write(buf[:k]); werr != nil {
							return
						}
						if n += int64(k); n > kp.limit && kp.armed.Load() {
							kp.killed.Store(true)
							kp.kill()
							return
						}
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	return kp
}

func (kp *killingProxy) arm() { kp.armed.Store(true) }

func (kp *killingProxy) kill() {
	kp.ln.Close()
	kp.mu.Lock()
	defer kp.mu.Unlock()
	for _, c := range kp.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, as a killed process's kernel sends
		}
		c.Close()
	}
	kp.conns = nil
}
