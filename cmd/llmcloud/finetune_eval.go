// `llmcloud finetune eval`: greedy generation on held-out examples (the prompt is every turn
// before the last assistant turn, rendered as the server renders a chat), exact match of the
// trimmed output against that turn, accuracy per task (the lines' "task" field) and overall.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/generate"
	"github.com/llmcloud/llmcloud/train/sft"
)

// evalResult is one task's accuracy.
type evalResult struct {
	Task    string  `json:"task"`
	Correct int     `json:"correct"`
	Total   int     `json:"total"`
	Acc     float64 `json:"accuracy"`
}

func runFinetuneEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("finetune eval", stderr)
	modelPath := fs.String("model", "", "model: GGUF file or Hugging Face directory (default: the built-in model)")
	dataPath := fs.String("data", "", "test examples, JSONL (as finetune reads them; an optional \"task\" field groups the accuracy)")
	maxTokens := fs.Int("max-tokens", 64, "tokens to generate at most per example")
	limit := fs.Int("limit", 0, "evaluate at most this many examples (0: all)")
	asJSON := fs.Bool("json", false, "print the accuracies as JSON")
	show := fs.Int("show", 0, "print this many examples' outputs")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *dataPath == "" {
		return usagef("finetune eval needs --data")
	}
	b, err := openBase(*modelPath)
	if err != nil {
		return err
	}
	defer b.Close()
	ex, err := sft.ReadFile(*dataPath)
	if err != nil {
		return err
	}
	if *limit > 0 && len(ex) > *limit {
		ex = ex[:*limit]
	}
	r := &sft.Renderer{Template: b.ChatTemplate, Tok: b.Tok}
	var stops []string
	if b.ChatTemplate == "" {
		stops = []string{"\n"} // the plain transcript ends a turn with a newline
	}
	res := map[string]*evalResult{}
	start := time.Now()
	for i, e := range ex {
		last := len(e.Messages) - 1
		for e.Messages[last].Role != "assistant" {
			last--
		}
		_, ids, err := r.Prompt(e.Messages[:last])
		if err != nil {
			return fmt.Errorf("%s:%d: %w", e.File, e.Line, err)
		}
		out, err := generate.Run(context.Background(), b.Model, b.Tok, ids, generate.Options{MaxTokens: *maxTokens, Stop: stops}, nil)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", e.File, e.Line, err)
		}
		got, want := strings.TrimSpace(out.Text), strings.TrimSpace(e.Messages[last].Content)
		task := e.Task
		if task == "" {
			task = "all"
		}
		for _, k := range []string{task, "overall"} {
			if res[k] == nil {
				res[k] = &evalResult{Task: k}
			}
			res[k].Total++
			if got == want {
				res[k].Correct++
			}
		}
		if i < *show {
			fmt.Fprintf(stdout, "[%s] want %q got %q\n", task, want, got)
		}
	}
	var list []evalResult
	for _, v := range res {
		v.Acc = float64(v.Correct) / float64(v.Total)
		list = append(list, *v)
	}
	slices.SortFunc(list, func(a, b evalResult) int {
		if (a.Task == "overall") != (b.Task == "overall") {
			if a.Task == "overall" {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Task, b.Task)
	})
	if *asJSON {
		return json.NewEncoder(stdout).Encode(list)
	}
	fmt.Fprintf(stdout, "model %s, %d examples of %s, greedy, exact match (%s)\n", b.Path, len(ex), *dataPath, time.Since(start).Round(time.Millisecond))
	for _, v := range list {
		fmt.Fprintf(stdout, "  %-12s %4d/%-4d %6.1f%%\n", v.Task, v.Correct, v.Total, 100*v.Acc)
	}
	return nil
}
