// The serve command: an OpenAI-compatible HTTP server (package server) over the engine, with
// vLLM's flag names. The listener opens first, so /health answers 503 while the model loads;
// SIGTERM or SIGINT stops accepting, lets running requests finish (bounded by
// --shutdown-timeout) and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/reasoning"
	"github.com/llmcloud/llmcloud/server"
	"github.com/llmcloud/llmcloud/toolcall"
)

func init() {
	register("serve", "serve a model over an OpenAI-compatible HTTP API (vLLM's flags and metrics)", runServe)
}

func runServe(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return serve(ctx, args, stderr, nil)
}

// serve runs the server until ctx ends; ready, if set, gets the listening address.
func serve(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := newFlags("serve", stderr)
	var mf modelFlags
	mf.register(fs)
	sc := engine.DefaultConfig()
	host := fs.String("host", "0.0.0.0", "address to listen on")
	port := fs.Int("port", 8000, "port to listen on (0 = any free port)")
	var names stringList
	fs.Var(&names, "served-model-name", "model name(s) clients use (repeatable or comma-separated; default: the model's name)")
	maxLen := fs.Int("max-model-len", 0, "maximum prompt + output tokens (0 = the model's context length, capped by the KV cache)")
	fs.IntVar(&sc.MaxNumSeqs, "max-num-seqs", sc.MaxNumSeqs, "sequences running at most")
	fs.IntVar(&sc.MaxNumBatchedTokens, "max-num-batched-tokens", sc.MaxNumBatchedTokens, "token budget of one engine step")
	fs.IntVar(&sc.BlockSizeTokens, "block-size", sc.BlockSizeTokens, "KV-cache block size in tokens")
	prefix := fs.Bool("enable-prefix-caching", true, "automatic prefix caching")
	noPrefix := fs.Bool("no-enable-prefix-caching", false, "turn automatic prefix caching off")
	chunked := fs.Bool("enable-chunked-prefill", true, "split long prompts across steps")
	noChunked := fs.Bool("no-enable-chunked-prefill", false, "turn chunked prefill off")
	apiKey := fs.String("api-key", os.Getenv("LLMCLOUD_API_KEY"), "require this key (Authorization: Bearer KEY) on /v1/* (default $LLMCLOUD_API_KEY)")
	noUI := fs.Bool("no-ui", false, "do not serve the web console at / (its JSON under /console/api/ stays, for the router and up)")
	protectAll := fs.Bool("protect-all", false, "with --api-key, also require the key on /tokenize, /detokenize and /metrics (/health and /version stay open)")
	seed := fs.Int64("seed", -1, "seed of the seeds given to requests without one (-1 = random)")
	tmplFlag := fs.String("chat-template", "", "chat template: a Jinja file, or the template itself")
	genCfg := fs.String("generation-config", "auto", "sampling defaults of requests that omit a field: auto (the model's generation_config.json or GGUF general.sampling.*, else temperature 0.8, top-p 0.95), vllm (vLLM's: temperature 1, top-p 1), or a directory holding generation_config.json")
	noLog := fs.Bool("disable-log-requests", false, "no log lines for successful requests (failures are still logged, at warn or error)")
	shutdownSec := fs.Float64("shutdown-timeout", 30, "seconds running requests get to finish after SIGTERM")
	kvMem := fs.String("kv-cache-memory", "", "KV cache bytes (suffixes KiB MiB GiB K M G; default: the scheduler's 1024 blocks or one max-model-len sequence, at most 10% of available memory)")
	maxQueued := fs.Int("max-queued-requests", 0, "requests waiting at most before 429 (0 = unbounded)")
	maxBody := fs.String("max-body-size", "8MiB", "largest request body (413 beyond)")
	autoTools := fs.Bool("enable-auto-tool-choice", false, "enable tool_choice \"auto\": the model decides when to call tools, and its replies are parsed for calls by --tool-call-parser (required with it)")
	toolParser := fs.String("tool-call-parser", "", "the tool-call format of the model, used to parse its replies into OpenAI tool_calls ("+strings.Join(toolcall.Names(), ", ")+"; hermes for Qwen2.5/Qwen3 and Hermes); tool_choice \"required\" and named functions also write calls in this format (hermes's when unset)")
	reasoningParser := fs.String("reasoning-parser", "", "the reasoning format of the model, used to split <think> reasoning into reasoning_content ("+strings.Join(reasoning.Names(), ", ")+")")
	var ho server.HTTPOptions
	httpFlags(fs, &ho)
	profDir := fs.String("profiler-dir", "", "enable POST /start_profile and /stop_profile (vLLM's), which write Chrome trace-event JSON of every engine step and op into this directory (open in https://ui.perfetto.dev)")
	var sp specFlags
	sp.register(fs, false)
	invariant := fs.Bool("batch-invariant", false, "a request gives the same tokens alone or in any batch (no reduction depends on the batch; a lone decode is slower)")
	lf := registerLoRAFlags(fs)
	pf := registerParallelFlags(fs)
	pd := registerPDFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	pos = lf.takeModules(pos)
	loraReg, err := lf.parse()
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 1:
		return usagef("unexpected arguments %q", pos[1:])
	case len(pos) == 1 && mf.model != "" && mf.model != pos[0]:
		return usagef("the model is given twice (%q and --model %q)", pos[0], mf.model)
	case len(pos) == 1:
		mf.model = pos[0]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := sp.check(); err != nil {
		return err
	}
	if *toolParser != "" {
		if _, err := toolcall.Lookup(*toolParser); err != nil {
			return usagef("--tool-call-parser: %v", err)
		}
	}
	if *autoTools && *toolParser == "" {
		return usagef("--enable-auto-tool-choice needs --tool-call-parser")
	}
	if *reasoningParser != "" {
		if _, err := reasoning.Lookup(*reasoningParser); err != nil {
			return usagef("--reasoning-parser: %v", err)
		}
	}
	sc.PrefixCaching = *prefix && !*noPrefix
	sc.ChunkedPrefill = *chunked && !*noChunked
	if err := pd.check(sc.PrefixCaching); err != nil {
		return err
	}
	var served []string
	for _, n := range names {
		for _, p := range strings.Split(n, ",") {
			if p = strings.TrimSpace(p); p != "" {
				served = append(served, p)
			}
		}
	}
	bodyBytes, err := parseBytes(*maxBody)
	if err != nil {
		return usagef("--max-body-size: %v", err)
	}
	var kvBytes int64
	if *kvMem != "" {
		if kvBytes, err = parseBytes(*kvMem); err != nil {
			return usagef("--kv-cache-memory: %v", err)
		}
	}
	tmpl := ""
	if *tmplFlag != "" {
		if src, err := os.ReadFile(*tmplFlag); err == nil {
			tmpl = string(src)
		} else if strings.ContainsAny(*tmplFlag, "{%") {
			tmpl = *tmplFlag
		} else {
			return fmt.Errorf("--chat-template: %w", err)
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := mf.useDefault(log); err != nil {
		return err
	}
	if err := pf.check(&mf, lf, sp.on); err != nil {
		return err
	}
	if pf.on() && pd.role != "" { // a rank's KV holds only its heads and layers
		return usagef("--kv-role with --tensor-parallel-size/--pipeline-parallel-size is not supported yet")
	}
	if pf.on() && mf.outType != "" {
		return usagef("--output-tensor-type with --tensor-parallel-size/--pipeline-parallel-size is not supported yet")
	}
	if pf.on() {
		defer pf.close()
		if worker, err := pf.start(ctx, args, &mf, log, stderr); worker || err != nil {
			return err
		}
	}
	opts := server.Options{ServedModelNames: served, APIKey: *apiKey, ProtectAll: *protectAll, ChatTemplate: tmpl,
		UseModelDefaults: *genCfg != "vllm", MaxBodyBytes: bodyBytes, LogRequests: !*noLog,
		Logger: log, Version: Version, ToolCallParser: *toolParser, EnableAutoToolChoice: *autoTools,
		ReasoningParser: *reasoningParser, ProfilerDir: *profDir, LoRA: loraReg, UI: !*noUI}
	pd.serverOptions(&opts, *apiKey, log)
	if set["seed"] && *seed >= 0 {
		s := uint64(*seed)
		opts.Seed = &s
	}
	opts.Registry = pf.reg // a distributed group's collectives are on it (serve_parallel.go)
	srv := server.New(opts)

	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	hs := server.NewHTTPServer(pd.handler(srv), ho)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(server.LimitListener(ln, ho)) }()
	addr := ln.Addr().String()
	log.Info("listening", "addr", addr, "model", mf.model)
	if !*noUI {
		log.Info("web console", "url", consoleURL(addr))
	}
	if ready != nil {
		ready(addr)
	}

	b, err := mf.open()
	if err != nil {
		hs.Close()
		return err
	}
	defer b.Close()
	switch *genCfg {
	case "auto":
	case "vllm":
		b.Defaults = loader.Defaults{}
	default:
		g, err := hfdir.ReadGenerationConfig(filepath.Join(*genCfg, "generation_config.json"))
		if err != nil {
			hs.Close()
			return fmt.Errorf("--generation-config: %w", err)
		}
		b.Defaults = loader.Defaults{Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK, MinP: g.MinP,
			RepetitionPenalty: g.RepetitionPenalty, MaxNewTokens: g.MaxNewTokens}
	}
	eo := engine.DefaultOptions()
	note, err := sizeKV(&sc, &b.Model.Config, b.Model.KVCacheDType, *maxLen, kvBytes, defaultKVBudget())
	if err != nil {
		hs.Close()
		return err
	}
	if note != "" {
		log.Warn(note)
	}
	eo.Scheduler = sc
	eo.KVCacheBytes = kvBytes // the engine splits it between KV groups (windowed layers) when the model has them
	eo.MaxQueuedRequests = *maxQueued
	eo.BatchInvariant = *invariant
	eo.OnStep = srv.StepHook
	if sp.on {
		kvTokens := (sc.NumBlocks + sc.MaxNumSeqs) * sc.BlockSizeTokens
		so, release, err := sp.build(b, sc.MaxModelLenTokens, kvTokens, *invariant)
		if err == nil {
			defer release()
			err = useSpec(&eo, so)
		}
		if err != nil {
			hs.Close()
			return err
		}
		log.Info("speculative decoding", "config", sp.describe())
	}
	if err := lf.load(loraReg, b, &eo, log); err != nil {
		hs.Close()
		return err
	}
	eng, err := engine.New(b.Model, b.Tok, eo)
	if err != nil {
		hs.Close()
		return err
	}
	if err := pf.attach(srv, b, eng, *invariant); err != nil { // before requests reach the engine
		hs.Close()
		eng.Shutdown(context.Background())
		return err
	}
	if err := pd.attach(eng); err != nil {
		eng.Shutdown(context.Background())
		hs.Close()
		return err
	}
	srv.Attach(b, eng)
	cfg := eng.Config()
	log.Info("ready", "model", b.Name, "max_model_len", cfg.MaxModelLenTokens, "kv_blocks", cfg.NumBlocks,
		"block_size", cfg.BlockSizeTokens, "kv_cache_dtype", b.Model.KVCacheDType, "kv_bytes_per_token", b.Model.KVBytesPerTokenCache(),
		"threads", mf.threads, "kernels", kernels.ISA())
	if len(cfg.KVGroups) > 0 {
		log.Info("KV groups: windowed layers release blocks before the window", "groups", cfg.KVGroupsString())
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		eng.Shutdown(context.Background())
		return err
	case <-pf.failed():
		return pf.stopServing(srv, eng, hs)
	}
	timeout := time.Duration(*shutdownSec * float64(time.Second))
	log.Info("shutting down", "timeout", timeout)
	srv.BeginShutdown()
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- hs.Shutdown(sctx) }()
	if err := eng.Shutdown(sctx); err != nil {
		log.Warn("shutdown timeout: running requests aborted", "err", err)
	}
	// The engine is done: every handler has its final Output and returns promptly.
	select {
	case err := <-httpDone:
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	case <-time.After(5 * time.Second):
		hs.Close()
	}
	log.Info("stopped")
	return nil
}

// httpFlags registers the connection bounds shared by serve and router.
func httpFlags(fs *flag.FlagSet, o *server.HTTPOptions) {
	fs.DurationVar(&o.ReadTimeout, "read-timeout", 30*time.Second, "limit of reading one request, headers and body (slow bodies are cut)")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 60*time.Second, "keep-alive connections idle this long are closed")
	fs.IntVar(&o.MaxConnections, "max-connections", 0, "open client connections at most; more wait in the kernel's backlog (0 = the open-file limit less 64, at most 4096)")
}

// consoleURL is the address a browser on this machine opens for a server listening on addr
// (localhost for a wildcard listener such as [::]:8000).
func consoleURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
