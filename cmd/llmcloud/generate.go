// The generate command: complete a prompt and print the continuation; timings go to stderr.
// With --draft or --speculative-config it decodes speculatively (generate_spec.go).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/llmcloud/llmcloud/generate"
)

func init() {
	register("generate", "complete a prompt (prefill and decode tokens/s on stderr)", runGenerate)
}

func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", stderr)
	var mf modelFlags
	var sf samplingFlags
	mf.register(fs)
	sf.register(fs)
	prompt := fs.String("prompt", "", "prompt text")
	noBOS := fs.Bool("no-bos", false, "do not add the BOS token the tokenizer would add")
	echo := fs.Bool("echo", false, "print the prompt before the continuation")
	var sp specFlags
	sp.register(fs, true)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if err := sp.check(); err != nil {
		return err
	}
	if err := mf.useDefault(textLog(stderr)); err != nil {
		return err
	}
	b, err := mf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	ids := b.Tok.Encode(*prompt, !*noBOS, true)
	if len(ids) == 0 {
		return usagef("the prompt is empty and the tokenizer adds no BOS token; give --prompt")
	}
	opts := generate.Options{
		MaxTokens: sf.maxTokens, Sample: sf.params(fs, b.Defaults),
		Stop: sf.stops, IgnoreEOS: sf.ignoreEOS,
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if *echo {
		fmt.Fprint(stdout, *prompt)
	}
	if sp.on {
		return generateSpec(ctx, b, ids, opts, &sp, stdout, stderr)
	}
	res, err := generate.Run(ctx, b.Model, b.Tok, ids, opts, func(s string) { fmt.Fprint(stdout, s) })
	fmt.Fprintln(stdout)
	if err != nil {
		return err
	}
	printTimings(stderr, res)
	return nil
}

func printTimings(w io.Writer, res generate.Result) {
	pp := float64(res.PromptTokens) / res.PrefillTime.Seconds()
	fmt.Fprintf(w, "prefill: %d tokens in %.3f s (%.1f tokens/s)\n", res.PromptTokens, res.PrefillTime.Seconds(), pp)
	if n := len(res.IDs) - 1; n > 0 && res.DecodeTime > 0 {
		fmt.Fprintf(w, "decode: %d tokens in %.3f s (%.1f tokens/s)\n", n, res.DecodeTime.Seconds(), float64(n)/res.DecodeTime.Seconds())
	}
	fmt.Fprintf(w, "finish reason: %s, %d tokens generated\n", res.FinishReason, len(res.IDs))
}
