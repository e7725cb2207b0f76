// The data command: `llmcloud data prepare` tokenizes text into the token shards the trainer
// reads (package data; format in docs/formats/shards.md) and prints token counts and the time.
package main

import (
	"fmt"
	"io"

	"github.com/llmcloud/llmcloud/data"
)

func init() {
	register("data", "training data: prepare (tokenize text into token shards), distill (sample documents from a model), sft-tasks and retell (fine-tuning datasets)", runData)
}

func runData(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "sft-tasks" {
		return runDataSFTTasks(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "retell" {
		return runDataRetell(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "distill" {
		return runDataDistill(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "prepare" {
		fmt.Fprintln(stderr, "usage: llmcloud data prepare --tokenizer DIR|tokenizer.json --input FILE [--val-input FILE | --val-fraction F] -o DIR")
		fmt.Fprintln(stderr, "       llmcloud data distill [--model FILE] --docs N -o FILE [--temperature T --top-p P --max-repeat R]")
		fmt.Fprintln(stderr, "       llmcloud data sft-tasks -o DIR [--train N --test N --seed S]   (fine-tuning's demonstration dataset)")
		fmt.Fprintln(stderr, "       llmcloud data retell --input STORIES --val-input STORIES -o DIR [--train N --val N --seed S]   (repeat-the-text dataset: a model that copies)")
		if len(args) == 0 {
			return usagef("which data command? (prepare, distill, sft-tasks, retell)")
		}
		if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			return nil
		}
		return usagef("unknown data command %q (want prepare, distill, sft-tasks or retell)", args[0])
	}
	fs := newFlags("data prepare", stderr)
	var o data.PrepareOptions
	fs.StringVar(&o.Tokenizer, "tokenizer", "", "tokenizer.json, or a directory holding one (e.g. written by: llmcloud tokenizer train)")
	fs.StringVar(&o.Input, "input", "", "training text (UTF-8)")
	fs.StringVar(&o.ValInput, "val-input", "", "validation text (default: --val-fraction of the input's documents)")
	fs.Float64Var(&o.ValFraction, "val-fraction", 0, "fraction of the input's documents that go to the val split, spread evenly (0 <= F < 1)")
	fs.StringVar(&o.OutDir, "o", "", "output directory (meta.json, tokenizer.json, train_*.bin, val_*.bin)")
	fs.Int64Var(&o.ShardTokens, "shard-tokens", data.DefaultShardTokens, "tokens per shard file")
	fs.StringVar(&o.DocSplit, "docs", "paragraph", "what a document is: paragraph (blank-line separated) or line")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case o.Tokenizer == "" || o.Input == "" || o.OutDir == "":
		return usagef("--tokenizer, --input and -o are required")
	}
	st, err := data.Prepare(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "train: %d tokens in %d documents\n", st.TrainTokens, st.TrainDocs)
	fmt.Fprintf(stdout, "val:   %d tokens in %d documents\n", st.ValTokens, st.ValDocs)
	secs := st.Elapsed.Seconds()
	fmt.Fprintf(stdout, "wrote %s in %.2f s (%.0f tokens/s)\n", o.OutDir, secs, float64(st.TrainTokens+st.ValTokens)/secs)
	return nil
}
