// `llmcloud data retell`: the retelling dataset (train/sft.GenerateRetell): train.jsonl and
// val.jsonl of instructions to repeat a given text word for word, made from plain-text
// stories (blank-line separated; .gz files are read through gzip).
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/llmcloud/llmcloud/train/sft"
)

func runDataRetell(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("data retell", stderr)
	out := fs.String("o", "", "output directory (train.jsonl, val.jsonl)")
	input := fs.String("input", "", "training stories: plain text, documents separated by blank lines (.gz: gzip)")
	valInput := fs.String("val-input", "", "held-out stories for val.jsonl (same format)")
	nTrain := fs.Int("train", 12000, "training examples")
	nVal := fs.Int("val", 100, "validation examples")
	seed := fs.Uint64("seed", 1, "seed (the val examples use seed+1)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *out == "" || *input == "" || *valInput == "" || *nTrain < 1 || *nVal < 1 {
		return usagef("data retell needs -o DIR, --input FILE, --val-input FILE and positive --train, --val")
	}
	for _, f := range []struct {
		name, src string
		n         int
		seed      uint64
	}{{"train.jsonl", *input, *nTrain, *seed}, {"val.jsonl", *valInput, *nVal, *seed + 1}} {
		docs, err := readDocs(f.src)
		if err != nil {
			return err
		}
		ex := sft.GenerateRetell(docs, f.n, f.seed)
		if len(ex) == 0 {
			return fmt.Errorf("%s: no documents", f.src)
		}
		p := filepath.Join(*out, f.name)
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		if err := writeJSONL(p, ex); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d examples from %d documents of %s\n", p, len(ex), len(docs), f.src)
	}
	return nil
}

var blankLines = regexp.MustCompile(`\n[ \t\r]*\n`)

// readDocs reads a text file (gzip when its name ends in .gz) as blank-line separated
// documents, empty ones dropped.
func readDocs(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			b, err = io.ReadAll(zr)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading gzip: %w", path, err)
		}
	}
	var docs []string
	for _, d := range blankLines.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), -1) {
		if d = strings.TrimSpace(d); d != "" {
			docs = append(docs, d)
		}
	}
	return docs, nil
}
