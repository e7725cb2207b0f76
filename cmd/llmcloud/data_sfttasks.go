// `llmcloud data sft-tasks`: the demonstration dataset of fine-tuning (train/sft.GenerateTasks):
// train.jsonl and test.jsonl of instructions with exactly checkable answers.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/train/sft"
)

func runDataSFTTasks(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("data sft-tasks", stderr)
	out := fs.String("o", "", "output directory (train.jsonl, test.jsonl)")
	nTrain := fs.Int("train", 1000, "training examples per task")
	nTest := fs.Int("test", 50, "held-out test examples per task (no prompt shared with training)")
	seed := fs.Uint64("seed", 1, "seed")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *out == "" || *nTrain < 1 || *nTest < 1 {
		return usagef("data sft-tasks needs -o DIR and positive --train, --test")
	}
	tr, te := sft.GenerateTasks(*seed, *nTrain, *nTest)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		ex   []sft.TaskExample
	}{{"train.jsonl", tr}, {"test.jsonl", te}} {
		p := filepath.Join(*out, f.name)
		if err := writeJSONL(p, f.ex); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d examples (%v)\n", p, len(f.ex), sft.Tasks)
	}
	return nil
}

// writeJSONL writes one JSON line per item to path (atomically), HTML characters unescaped.
func writeJSONL[T any](path string, items []T) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, e := range items {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	})
}
