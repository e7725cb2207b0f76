// The tokenizer command: `llmcloud tokenizer train` learns a byte-level BPE tokenizer from text
// files (package tokenizer/bpetrain) and writes tokenizer.json + tokenizer_config.json.
package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/tokenizer/bpetrain"
)

func init() {
	register("tokenizer", "tokenizers: train (byte-level BPE from text, written as tokenizer.json)", runTokenizer)
}

func runTokenizer(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "train" {
		fmt.Fprintln(stderr, "usage: llmcloud tokenizer train --vocab-size N --input FILE... -o DIR [--min-frequency F] [--special-tokens LIST] [--force]")
		if len(args) == 0 {
			return usagef("which tokenizer command? (train)")
		}
		if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			return nil
		}
		return usagef("unknown tokenizer command %q (want train)", args[0])
	}
	fs := newFlags("tokenizer train", stderr)
	var inputs stringList
	fs.Var(&inputs, "input", "training text file (repeat the flag, or list more files as arguments)")
	vocab := fs.Int("vocab-size", 4096, "vocabulary size: special tokens + 256 bytes + merges")
	minFreq := fs.Int64("min-frequency", 2, "never merge a pair seen fewer times (training may stop below --vocab-size)")
	specials := fs.String("special-tokens", "<|endoftext|>", "comma-separated special tokens; the first is BOS and EOS")
	out := fs.String("o", "", "output directory (tokenizer.json, tokenizer_config.json)")
	force := fs.Bool("force", false, "overwrite tokenizer.json and tokenizer_config.json in the output directory")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	inputs = append(inputs, pos...)
	if len(inputs) == 0 || *out == "" {
		return usagef("--input FILE and -o DIR are required")
	}
	var sp []string
	for s := range strings.SplitSeq(*specials, ",") {
		if s = strings.TrimSpace(s); s != "" {
			sp = append(sp, s)
		}
	}
	start := time.Now()
	counts, err := bpetrain.CountWords(inputs, "gpt-2", sp)
	if err != nil {
		return err
	}
	counted := time.Since(start)
	res, err := bpetrain.Train(counts, bpetrain.Options{VocabSize: *vocab, MinFrequency: *minFreq, Specials: sp})
	if err != nil {
		return err
	}
	if err := bpetrain.WriteDir(*out, res.Vocab, *force); err != nil {
		return err
	}
	total := time.Since(start)
	fmt.Fprintf(stdout, "counted %d distinct pre-tokens in %.2f s\n", res.Words, counted.Seconds())
	fmt.Fprintf(stdout, "learned %d merges in %.2f s (last merged pair seen %d times)\n", res.Merges, (total - counted).Seconds(), res.LastMin)
	fmt.Fprintf(stdout, "wrote %s: %d tokens (%d special), %.2f s in all\n", *out, len(res.Vocab.Tokens), len(sp), total.Seconds())
	if n := len(res.Vocab.Tokens); n < *vocab {
		fmt.Fprintf(stdout, "note: stopped below --vocab-size %d: no pair left seen at least %d times\n", *vocab, *minFreq)
	}
	return nil
}
