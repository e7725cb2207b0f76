// Disaggregated prefill and decode (--policy pd). Each replica's GET /v1/models says its
// kv_role (llmcloud serve --kv-role: producer, consumer, both; absent: none), polled with the
// model lists (models.go). A completion or chat completion goes to the least-loaded healthy
// producer, rewritten to compute its prompt and one token (max_tokens 1, not streamed), with
// X-KV-Transfer-Hold (the producer's export can follow the prefill, or it keeps the prompt's KV
// for the export); at the same time (after the producer's answer with Options.PDSequential)
// the original request goes to the least-loaded healthy consumer other than that producer,
// with X-KV-Transfer-Source naming the producer (and X-KV-Transfer-Pending when the prefill
// may still run), and that consumer's answer (SSE or not) is the client's. The consumer fetches the prompt's KV blocks from the producer
// (package kvtransfer) and decodes. When there is no producer or no consumer to pair, the request
// goes to one replica, chosen least-loaded among all, as an ordinary request; when the prefill
// fails, the consumer gets the request without the header and computes the prompt itself; when
// the consumer fails before its first byte, the ordinary retries take over. A prompt shorter
// than Options.PDMinPromptBytes (the prompt text, or the chat's messages as the router reads
// them) goes to a consumer alone, which computes it. Every other path
// (models, tokenize, ...) is routed least-loaded.

package router

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/llmcloud/llmcloud/kvtransfer"
	"github.com/prometheus/client_golang/prometheus"
)

// pdPolicy is least-load; servePD applies it within each role.
type pdPolicy struct{ leastLoad }

func (p *pdPolicy) Name() string { return PD }

// KV roles as replicas list them.
const (
	roleProducer = "producer"
	roleConsumer = "consumer"
	roleBoth     = "both"
)

// PD outcomes, the llmcloud_router_pd_requests_total labels.
const (
	pdDisaggregated = "disaggregated"  // prefilled on a producer, decoded on a consumer
	pdPrefillFailed = "prefill_failed" // the consumer computed the prompt itself
	pdNoPair        = "no_pair"        // no producer/consumer pair: one ordinary replica
	pdDecodeFailed  = "decode_failed"  // the consumer failed before answering: ordinary retries
	pdShort         = "short_prompt"   // under PDMinPromptBytes: the consumer computed it
)

type pdMetrics struct {
	requests *prometheus.CounterVec
	prefill  prometheus.Histogram
}

func newPDMetrics(reg prometheus.Registerer) (*pdMetrics, error) {
	m := &pdMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmcloud_router_pd_requests_total",
			Help: "Requests under --policy pd, by outcome: disaggregated, prefill_failed (the consumer recomputed the prompt), no_pair (one ordinary replica), decode_failed (ordinary retries), short_prompt (under --pd-min-prompt-bytes: the consumer alone)."}, []string{"outcome"}),
		prefill: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "llmcloud_router_pd_prefill_seconds",
			Help: "Time of the prefill request on the producer.", Buckets: latencyBuckets}),
	}
	for _, o := range []string{pdDisaggregated, pdPrefillFailed, pdNoPair, pdDecodeFailed, pdShort} {
		m.requests.WithLabelValues(o)
	}
	for _, c := range []prometheus.Collector{m.requests, m.prefill} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// pdRequest reports whether req is a generation the pd policy splits.
func pdRequest(req *http.Request) bool {
	return req.Method == http.MethodPost && (req.URL.Path == "/v1/completions" || req.URL.Path == "/v1/chat/completions")
}

func produces(role string) bool { return role == roleProducer || role == roleBoth }
func consumes(role string) bool { return role == roleConsumer || role == roleBoth }

// servePD runs one request through a producer and a consumer. done: the client has its answer
// (or is gone); else tried is the consumer that failed (nil: none was tried) and serveProxy
// goes on as for any policy.
func (r *Router) servePD(w http.ResponseWriter, req *http.Request, body []byte, id string, in Input, saved **savedResponse) (done bool, tried *backend) {
	prod := r.pickRole(in, produces, nil)
	cons := r.pickRole(in, consumes, prod)
	pbody, ok := prefillBody(body)
	if prod == nil || cons == nil || !ok {
		r.pd.requests.WithLabelValues(pdNoPair).Inc()
		return false, nil
	}
	outcome := pdDisaggregated
	dreq := req.Clone(req.Context())
	switch {
	case len(in.Prompt) < r.opts.PDMinPromptBytes:
		outcome = pdShort
	case !r.opts.PDSequential:
		return r.serveOverlapped(w, req, dreq, body, pbody, id, prod, cons, saved)
	default:
		if err := r.prefill(req, pbody, id, prod); err != nil {
			r.log.Warn("router: prefill failed: the consumer computes the prompt", "producer", prod.url, "request_id", id, "err", err)
			outcome = pdPrefillFailed
		} else {
			dreq.Header.Set(kvtransfer.SourceHeader, prod.url)
		}
		if req.Context().Err() != nil {
			return true, nil // the client left during the prefill
		}
	}
	if r.try(w, dreq, body, id, cons, saved) != tryDone {
		r.pd.requests.WithLabelValues(pdDecodeFailed).Inc()
		return false, cons
	}
	r.pd.requests.WithLabelValues(outcome).Inc()
	return true, cons
}

// serveOverlapped sends the prefill to prod and the request to cons at once: cons's transfer
// waits for the prefill on prod and streams the blocks as prod computes them (PendingHeader).
// When the prefill fails, cons's transfer fails with it and cons computes the prompt.
func (r *Router) serveOverlapped(w http.ResponseWriter, req, dreq *http.Request, body, pbody []byte, id string, prod, cons *backend, saved **savedResponse) (bool, *backend) {
	// The prefill is cancelled if the client leaves before the consumer has answered; after
	// that it runs to its end (its own timeout) and its outcome is counted then: it normally
	// ends before the consumer's first token, but its answer may reach the router after the
	// consumer's, and a client's answer is not held back for it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(req.Context()))
	stop := context.AfterFunc(req.Context(), cancel)
	prefilled := make(chan error, 1)
	preq := req.Clone(ctx) // before the handler can return
	go func() { prefilled <- r.prefill(preq, pbody, id, prod) }()
	dreq.Header.Set(kvtransfer.SourceHeader, prod.url)
	dreq.Header.Set(kvtransfer.PendingHeader, "1")
	res := r.try(w, dreq, body, id, cons, saved)
	stop()
	go func() {
		defer cancel()
		err := <-prefilled
		switch {
		case res != tryDone:
		case err != nil:
			r.log.Warn("router: prefill failed: the consumer computed the prompt", "producer", prod.url, "request_id", id, "err", err)
			r.pd.requests.WithLabelValues(pdPrefillFailed).Inc()
		default:
			r.pd.requests.WithLabelValues(pdDisaggregated).Inc()
		}
	}()
	if res != tryDone {
		r.pd.requests.WithLabelValues(pdDecodeFailed).Inc()
		return false, cons
	}
	return true, cons
}

// pickRole is the least-loaded healthy backend whose role passes has, other than not, among
// those that may serve in's model; nil when there is none.
func (r *Router) pickRole(in Input, has func(string) bool, not *backend) *backend {
	r.mu.RLock()
	defer r.mu.RUnlock()
	match, all := r.eligible(in.Model)
	var best *backend
	bestScore := 0.0
	for _, b := range r.backends {
		if b == not || !b.healthy || !has(b.kvRole) || (!all && !match(b)) {
			continue
		}
		s := Score(Candidate{Inflight: int(b.inflight.Load()), Running: b.load.Running, Waiting: b.load.Waiting, KVUsage: b.load.KVUsage})
		if best == nil || s < bestScore {
			best, bestScore = b, s
		}
	}
	return best
}

// prefillBody rewrites a completion body to prefill only: one token, not streamed, one choice.
func prefillBody(body []byte) ([]byte, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, false
	}
	for _, k := range []string{"max_completion_tokens", "stream_options", "min_tokens", "best_of"} {
		delete(m, k)
	}
	m["max_tokens"] = json.RawMessage("1")
	m["stream"] = json.RawMessage("false")
	m["n"] = json.RawMessage("1")
	out, err := json.Marshal(m)
	return out, err == nil
}

// prefill sends the prefill request to prod and waits for its whole answer.
func (r *Router) prefill(req *http.Request, body []byte, id string, prod *backend) error {
	ctx, cancel := context.WithTimeout(req.Context(), min(r.opts.TTFBTimeout, r.opts.RequestTimeout))
	defer cancel()
	prod.inflight.Add(1)
	prod.inflightG.Inc()
	defer func() {
		prod.inflight.Add(-1)
		prod.inflightG.Dec()
	}()
	start := time.Now()
	preq := req.Clone(ctx)
	preq.ContentLength = int64(len(body))
	preq.Header.Del("Content-Length")
	preq.Header.Set(kvtransfer.HoldHeader, "1")
	resp, err := r.send(ctx, preq, body, id+"-prefill", prod)
	if err != nil {
		r.m.requests.WithLabelValues(prod.url, "error").Inc()
		if req.Context().Err() == nil {
			prod.failures.Add(1)
			r.setHealth(prod, err, "request")
		}
		return err
	}
	defer resp.Body.Close()
	r.m.requests.WithLabelValues(prod.url, strconv.Itoa(resp.StatusCode)).Inc()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 500 {
			prod.failures.Add(1)
			r.setHealth(prod, errors.New("answered "+resp.Status), "request")
		}
		return errors.New("producer answered " + resp.Status)
	}
	if err != nil {
		return err
	}
	prod.lastByte.Store(r.now())
	r.pd.prefill.Observe(time.Since(start).Seconds())
	return nil
}
