// This file is serve's part in disaggregated prefill and decode (--kv-role, vLLM's kv-transfer
// role names): a producer answers POST /v1/kv/export with the KV blocks of a prompt it has
// prefilled (package kvtransfer's wire format); a consumer, given a request with the
// X-KV-Transfer-Source header (set by `llmcloud router --policy pd`), fetches the prompt's
// blocks from that producer and installs them in its prefix cache before the request runs. A
// fetch that fails for any reason is logged and counted, and the consumer computes the prompt
// itself. A producer's request with X-KV-Transfer-Hold (the router's prefill request) can be
// followed by an export while it runs (each block sent after the step that computed it; an
// export with X-KV-Transfer-Pending's prefill_pending waits for it to arrive), or keeps a copy
// of its prompt's KV when it finishes, so the export does not wait for the producer's next step
// boundary. docs/disaggregated.md describes the whole.
package main

import (
	"context"
	"crypto/subtle"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/kvtransfer"
	"github.com/llmcloud/llmcloud/server"
)

// KV roles.
const (
	kvRoleProducer = "kv_producer"
	kvRoleConsumer = "kv_consumer"
	kvRoleBoth     = "kv_both"
)

type pdFlags struct {
	role    string
	timeout time.Duration

	apiKey  string
	log     *slog.Logger
	metrics *kvtransfer.Metrics
	eng     atomic.Pointer[engine.Engine]
	client  *http.Client
}

func registerPDFlags(fs *flag.FlagSet) *pdFlags {
	p := &pdFlags{}
	fs.StringVar(&p.role, "kv-role", "", "disaggregated prefill/decode role (vLLM's kv_role): producer (prefills prompts and serves their KV blocks on POST /v1/kv/export), consumer (fetches a prompt's KV from the producer the router names), both; empty: neither")
	fs.DurationVar(&p.timeout, "kv-transfer-timeout", 30*time.Second, "a consumer's limit on fetching one prompt's KV blocks (then it computes the prompt itself); a producer's limit on waiting for the prefill an overlapped export follows (then it exports what its prefix cache holds)")
	return p
}

// check normalizes --kv-role (producer or kv_producer ...) and checks what it needs.
func (p *pdFlags) check(prefixCaching bool) error {
	switch strings.TrimPrefix(p.role, "kv_") {
	case "":
		p.role = ""
		return nil
	case "producer":
		p.role = kvRoleProducer
	case "consumer":
		p.role = kvRoleConsumer
	case "both":
		p.role = kvRoleBoth
	default:
		return usagef("--kv-role %q: want producer, consumer or both", p.role)
	}
	if !prefixCaching {
		return usagef("--kv-role %s needs prefix caching (transferred KV blocks are prefix-cache entries); drop --no-enable-prefix-caching", p.role)
	}
	if p.timeout <= 0 {
		return usagef("--kv-transfer-timeout must be positive")
	}
	return nil
}

func (p *pdFlags) produces() bool { return p.role == kvRoleProducer || p.role == kvRoleBoth }
func (p *pdFlags) consumes() bool { return p.role == kvRoleConsumer || p.role == kvRoleBoth }

// serverOptions sets opts' KV role and import hook.
func (p *pdFlags) serverOptions(opts *server.Options, apiKey string, log *slog.Logger) {
	if p.role == "" {
		return
	}
	p.apiKey, p.log = apiKey, log
	p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second}}
	opts.KVRole = strings.TrimPrefix(p.role, "kv_")
	if p.consumes() {
		opts.KVImport = p.fetch
	}
	if p.produces() {
		opts.KVHold = func(ctx context.Context) bool { return ctx.Value(kvHoldKey{}) != nil }
	}
}

// handler wraps srv's handler: the producer's export endpoint, and the consumer's reading of
// the source header into the request's context. metrics go to srv's registry.
func (p *pdFlags) handler(srv *server.Server) http.Handler {
	h := srv.Handler()
	if p.role == "" {
		return h
	}
	p.metrics = kvtransfer.NewMetrics(srv.Registry())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == kvtransfer.ExportPath && p.produces() {
			p.serveExport(w, r)
			return
		}
		if src := r.Header.Get(kvtransfer.SourceHeader); src != "" && p.consumes() {
			ctx := context.WithValue(r.Context(), kvSourceKey{}, src)
			if r.Header.Get(kvtransfer.PendingHeader) != "" {
				ctx = context.WithValue(ctx, kvPendingKey{}, true)
			}
			r = r.WithContext(ctx)
		}
		if r.Header.Get(kvtransfer.HoldHeader) != "" && p.produces() {
			r = r.WithContext(context.WithValue(r.Context(), kvHoldKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

type (
	kvSourceKey  struct{}
	kvPendingKey struct{}
	kvHoldKey    struct{}
)

// attach gives the hooks the engine once it is built.
func (p *pdFlags) attach(eng *engine.Engine) error {
	if p.role == "" {
		return nil
	}
	if _, err := eng.KVLayout(); err != nil {
		return fmt.Errorf("--kv-role %s: %w", p.role, err)
	}
	p.eng.Store(eng)
	return nil
}

func (p *pdFlags) layout(eng *engine.Engine) (kvtransfer.Layout, error) {
	l, err := eng.KVLayout()
	return kvtransfer.Layout{Layers: l.Layers, BlockSize: l.BlockSize, KRowBytes: l.KRowBytes, VRowBytes: l.VRowBytes, DType: l.DType}, err
}

func (p *pdFlags) serveExport(w http.ResponseWriter, r *http.Request) {
	if p.apiKey != "" && !bearerIs(r.Header.Get("Authorization"), p.apiKey) {
		http.Error(w, "kvtransfer: invalid or missing API key", http.StatusUnauthorized)
		return
	}
	eng := p.eng.Load()
	if eng == nil {
		http.Error(w, "kvtransfer: the model is loading", http.StatusServiceUnavailable)
		return
	}
	l, err := p.layout(eng)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	kvtransfer.Handler(l, func(ctx context.Context, req kvtransfer.ExportRequest) (kvtransfer.Source, error) {
		var wait time.Duration
		if req.PrefillPending {
			wait = p.timeout // the router sent the prefill at the same time: it may not be here yet
		}
		s, err := eng.StreamKV(ctx, req.PromptTokenIDs, req.CacheSalt, 0, wait)
		if err != nil {
			return nil, err
		}
		return s, nil
	}, p.metrics).ServeHTTP(w, r)
}

// fetch is the consumer's server.Options.KVImport.
func (p *pdFlags) fetch(ctx context.Context, prompt []int, salt string, adapter uint32) [][]byte {
	src, _ := ctx.Value(kvSourceKey{}).(string)
	eng := p.eng.Load()
	if src == "" || eng == nil {
		return nil
	}
	if adapter != 0 {
		return nil // adapter ids are per replica: the export is of the base model only
	}
	l, err := p.layout(eng)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	pending := ctx.Value(kvPendingKey{}) != nil
	req := kvtransfer.ExportRequest{PromptTokenIDs: prompt, CacheSalt: salt, PrefillPending: pending}
	blocks, err := kvtransfer.Fetch(ctx, p.client, src, p.apiKey, req, l, p.metrics)
	if err != nil {
		p.log.Warn("KV transfer failed: computing the prompt here", "source", src, "prompt_tokens", len(prompt), "err", err)
		return nil
	}
	return blocks
}

// bearerIs reports whether an Authorization header carries key.
func bearerIs(header, key string) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(key)) == 1
}
