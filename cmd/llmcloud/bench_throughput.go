// The `bench throughput` command: offline throughput of the serving engine, like
// `vllm bench throughput` — random prompts, all submitted at once, timed to the last token.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/perf"
)

func init() {
	benchModes["throughput"] = runBenchThroughput
}

func runBenchThroughput(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench throughput", stderr)
	var mf modelFlags
	mf.register(fs)
	o := perf.ThroughputOptions{Engine: engine.DefaultOptions()}
	sc := &o.Engine.Scheduler
	fs.IntVar(&o.NumPrompts, "num-prompts", 64, "number of prompts")
	fs.IntVar(&o.InputLen, "input-len", 128, "prompt tokens per request (random ids), after the shared prefix")
	fs.IntVar(&o.PrefixLen, "prefix-len", 0, "random tokens of one prefix that every prompt starts with (like vLLM's --random-prefix-len)")
	fs.IntVar(&o.OutputLen, "output-len", 128, "generated tokens per request (EOS ignored)")
	fs.Float64Var(&o.Temperature, "temperature", 1.0, "sampling temperature (vLLM's benchmark samples at 1.0; 0 = greedy)")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the prompts and samplers")
	fs.IntVar(&sc.MaxNumSeqs, "max-num-seqs", sc.MaxNumSeqs, "sequences running at most")
	fs.IntVar(&sc.MaxNumBatchedTokens, "max-num-batched-tokens", sc.MaxNumBatchedTokens, "token budget of one step")
	fs.IntVar(&sc.BlockSizeTokens, "block-size", sc.BlockSizeTokens, "KV block size in tokens")
	fs.IntVar(&sc.MaxModelLenTokens, "max-model-len", 0, "maximum prompt + output tokens (0 = the model's context, at least input+output)")
	kvMem := fs.String("kv-cache-memory", "", "KV cache bytes (suffixes KiB MiB GiB K M G; default: room for every running sequence at once)")
	noPrefix := fs.Bool("no-enable-prefix-caching", false, "turn automatic prefix caching off")
	noChunk := fs.Bool("no-enable-chunked-prefill", false, "turn chunked prefill off")
	fs.BoolVar(&o.Engine.BatchInvariant, "batch-invariant", o.Engine.BatchInvariant, "bit-identical results whatever the batch (a lone row's matmuls run on the GEMM kernels)")
	jsonOut := fs.String("output-json", "", "also write the results to this JSON file")
	lb := registerBenchLoRAFlags(fs)
	var sp specFlags
	sp.register(fs, true)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := sp.check(); err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case o.NumPrompts < 1 || o.InputLen < 1 || o.OutputLen < 1:
		return usagef("--num-prompts, --input-len and --output-len must be at least 1")
	}
	sc.PrefixCaching = !*noPrefix
	sc.ChunkedPrefill = !*noChunk
	if err := mf.useDefault(textLog(stderr)); err != nil {
		return err
	}
	b, err := mf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	m := b.Model
	per := m.KVBytesPerTokenCache()
	if *kvMem != "" {
		if o.Engine.KVCacheBytes, err = parseBytes(*kvMem); err != nil {
			return usagef("--kv-cache-memory: %v", err)
		}
	} else {
		maxLen := max(sc.MaxModelLenTokens, m.Config.CtxLen, o.PrefixLen+o.InputLen+o.OutputLen)
		seqs := min(o.NumPrompts, sc.MaxNumSeqs)
		bs := int64(sc.BlockSizeTokens)
		perSeq := (int64(o.PrefixLen+o.InputLen+o.OutputLen+sp.cfg.NumTokens) + bs - 1) / bs * bs
		o.Engine.KVCacheBytes = max(int64(seqs)*perSeq, int64(maxLen)+bs) * per
	}
	if sp.on {
		maxLen := sc.MaxModelLenTokens
		if maxLen == 0 {
			maxLen = max(m.Config.CtxLen, o.PrefixLen+o.InputLen+o.OutputLen)
		}
		kvTokens := int(o.Engine.KVCacheBytes/per) + min(o.NumPrompts, sc.MaxNumSeqs)*sc.BlockSizeTokens
		so, release, err := sp.build(b, maxLen, kvTokens, o.Engine.BatchInvariant)
		if err != nil {
			return err
		}
		defer release()
		if err := useSpec(&o.Engine, so); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Speculative decoding: %s\n", sp.describe())
	}
	if err := lb.setup(b, &o, stdout); err != nil {
		return err
	}
	res, err := perf.Throughput(m, b.Tok, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Throughput: %.2f requests/s, %.2f total tokens/s, %.2f output tokens/s\n",
		res.RequestsPerSecond, res.TokensPerSecond, res.OutputTokensPerSecond)
	fmt.Fprintf(stdout, "Total num prompt tokens:  %d (%d computed, %d from the prefix cache)\nTotal num output tokens:  %d\n",
		o.NumPrompts*(o.PrefixLen+o.InputLen), res.PrefillTokens, res.PrefixHitTokens, res.TotalOutputTokens)
	fmt.Fprintf(stdout, "Elapsed: %.2f s, %d steps (%.2f s forward, %.2f s sampling), mean TTFT %.3f s\n",
		res.ElapsedSeconds, res.Steps, res.ForwardSeconds, res.SampleSeconds, res.MeanTTFTSeconds)
	fmt.Fprintf(stdout, "Decode-only steps: %d, mean batch %.1f, %.2f tokens/s\n", res.DecodeSteps, res.MeanDecodeBatch, res.DecodeTokensPerSecond)
	fmt.Fprintf(stdout, "KV cache: %d blocks of %d tokens (%.1f MiB, %s, %d B/token), %d preemptions, %d prefix-hit tokens; batch invariant %v\n",
		res.NumBlocks, res.BlockSize, float64(int64(res.NumBlocks*res.BlockSize)*per)/(1<<20), m.KVCacheDType, per, res.Preemptions, res.PrefixHitTokens, res.BatchInvariant)
	if res.SpecDrafts > 0 {
		fmt.Fprintf(stdout, "Speculation: %d drafts, %d draft tokens, %d accepted (%.1f%%), mean acceptance length %.2f\n",
			res.SpecDrafts, res.SpecDraftTokens, res.SpecAcceptedTokens, 100*res.SpecAcceptanceRate, res.SpecMeanAccepted)
		fmt.Fprintf(stdout, "Accepted per draft by position:")
		for i, r := range res.SpecPosRate {
			fmt.Fprintf(stdout, " %d:%.3f", i, r)
		}
		fmt.Fprintln(stdout)
	}
	if *jsonOut != "" {
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// parseBytes reads a byte count with an optional binary (KiB, MiB, GiB) or decimal-looking
// (K, M, G: also powers of 1024, as vLLM's memory flags treat them) suffix.
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	u := strings.ToUpper(strings.TrimSpace(s))
	for _, suf := range []struct {
		s string
		m int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(u, suf.s) {
			u, mult = strings.TrimSpace(strings.TrimSuffix(u, suf.s)), suf.m
			break
		}
	}
	v, err := strconv.ParseFloat(u, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad byte count %q", s)
	}
	return int64(v * float64(mult)), nil
}
