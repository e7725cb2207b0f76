// This file implements Prepare, the text-to-shards step behind `llmcloud data prepare`: text is
// cut into documents (blank-line-separated paragraphs, or lines), each document is encoded with
// the tokenizer and prefixed with its BOS token (<|endoftext|> for tokenizers from `llmcloud
// tokenizer train`), and the ids are streamed into the shards of the train and val splits.
// Encoding runs on all CPUs; the output does not depend on how many.

package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/tokenizer"
)

// PrepareOptions configures Prepare.
type PrepareOptions struct {
	Tokenizer   string  // a tokenizer.json, or a directory holding one (tokenizer_config.json beside it is used too)
	Input       string  // training text
	ValInput    string  // validation text; if empty, ValFraction of Input's documents go to val
	ValFraction float64 // in [0,1): document i goes to val when floor((i+1)*f) > floor(i*f)
	OutDir      string
	ShardTokens int64  // tokens per shard file (0: DefaultShardTokens)
	DocSplit    string // "paragraph" (blank lines separate documents; default) or "line"
}

// PrepareStats is what Prepare did.
type PrepareStats struct {
	TrainTokens, ValTokens int64
	TrainDocs, ValDocs     int
	Elapsed                time.Duration
}

// Prepare tokenizes the input into o.OutDir (created if needed; it must not hold a meta.json
// already). On error the shards written so far are removed and no meta.json is written.
func Prepare(o PrepareOptions) (PrepareStats, error) {
	start := time.Now()
	var st PrepareStats
	if o.ShardTokens == 0 {
		o.ShardTokens = DefaultShardTokens
	}
	if o.DocSplit == "" {
		o.DocSplit = "paragraph"
	}
	if o.DocSplit != "paragraph" && o.DocSplit != "line" {
		return st, fmt.Errorf("data: document split %q is neither \"paragraph\" nor \"line\"", o.DocSplit)
	}
	if o.ValFraction < 0 || o.ValFraction >= 1 {
		return st, fmt.Errorf("data: val fraction %g outside [0,1)", o.ValFraction)
	}
	if o.ValInput != "" && o.ValFraction > 0 {
		return st, errors.New("data: give a val input or a val fraction, not both")
	}
	tokPath := o.Tokenizer
	if fi, err := os.Stat(tokPath); err == nil && fi.IsDir() {
		tokPath = filepath.Join(tokPath, "tokenizer.json")
	}
	v, err := tokenizer.VocabFromHFJSON(tokPath)
	if err != nil {
		return st, err
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		return st, err
	}
	bos := v.BOS
	if bos < 0 {
		return st, fmt.Errorf("data: tokenizer %s has no BOS token to start documents with", tokPath)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return st, fmt.Errorf("data: %w", err)
	}
	if _, err := os.Stat(filepath.Join(o.OutDir, MetaFile)); err == nil {
		return st, fmt.Errorf("data: %s already holds a prepared data set (%s); choose another directory", o.OutDir, MetaFile)
	}
	vocabSize := tok.VocabSize()
	train, err := NewShardWriter(o.OutDir, "train", vocabSize, o.ShardTokens)
	if err != nil {
		return st, err
	}
	val, _ := NewShardWriter(o.OutDir, "val", vocabSize, o.ShardTokens)
	fail := func(err error) (PrepareStats, error) {
		train.err, val.err = err, err // Close removes the shards of a failed writer
		train.Close()
		val.Close()
		return st, err
	}
	enc := func(docs []string) [][]int { return encodeDocs(tok, bos, docs) }
	i := 0 // document index in Input, for ValFraction
	err = eachDocBatch(o.Input, o.DocSplit, func(docs []string) error {
		for _, ids := range enc(docs) {
			w, toVal := train, o.ValFraction > 0 && int64(float64(i+1)*o.ValFraction) > int64(float64(i)*o.ValFraction)
			if toVal {
				w = val
				st.ValDocs, st.ValTokens = st.ValDocs+1, st.ValTokens+int64(len(ids))
			} else {
				st.TrainDocs, st.TrainTokens = st.TrainDocs+1, st.TrainTokens+int64(len(ids))
			}
			if err := w.Write(ids); err != nil {
				return err
			}
			i++
		}
		return nil
	})
	if err == nil && o.ValInput != "" {
		err = eachDocBatch(o.ValInput, o.DocSplit, func(docs []string) error {
			for _, ids := range enc(docs) {
				st.ValDocs, st.ValTokens = st.ValDocs+1, st.ValTokens+int64(len(ids))
				if err := val.Write(ids); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil && st.TrainDocs == 0 {
		err = fmt.Errorf("data: %s has no documents for the train split", o.Input)
	}
	if err != nil {
		return fail(err)
	}
	trainShards, err := train.Close()
	if err != nil {
		return fail(err)
	}
	valShards, err := val.Close()
	if err != nil {
		return fail(err)
	}
	m := &Meta{Format: FormatName, Version: Version, Tokenizer: "tokenizer.json", VocabSize: vocabSize,
		DType: DTypeFor(vocabSize), BOSID: bos, EOSID: v.EOS, Train: trainShards, Val: valShards}
	err = copyFile(tokPath, filepath.Join(o.OutDir, "tokenizer.json"))
	if cfg := filepath.Join(filepath.Dir(tokPath), "tokenizer_config.json"); err == nil && fileExists(cfg) {
		err = copyFile(cfg, filepath.Join(o.OutDir, "tokenizer_config.json"))
	}
	if err == nil {
		err = WriteMeta(o.OutDir, m)
	}
	if err != nil {
		for _, s := range append(trainShards, valShards...) {
			os.Remove(filepath.Join(o.OutDir, s.File))
		}
		return st, err
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

// encodeDocs encodes docs on all CPUs: result i is [bos] + tokens of docs[i].
func encodeDocs(tok *tokenizer.Tokenizer, bos int, docs []string) [][]int {
	out := make([][]int, len(docs))
	workers := min(runtime.GOMAXPROCS(0), len(docs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(docs); i += workers {
				out[i] = tok.Encode(docs[i], false, false)
				out[i] = append([]int{bos}, out[i]...)
			}
		})
	}
	wg.Wait()
	return out
}

// batchBytes is how much text eachDocBatch hands over at once.
const batchBytes = 4 << 20

// eachDocBatch reads path and calls fn with consecutive batches of its documents, in order.
// "paragraph": lines between blank (white-space only) lines, joined by "\n", form a document;
// "line": every non-blank line is one. Line ends ("\n", "\r\n") are not part of a document's
// last line.
func eachDocBatch(path, split string, fn func(docs []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var docs []string
	var para []string
	size := 0
	flushPara := func() {
		if len(para) > 0 {
			d := strings.Join(para, "\n")
			docs, para, size = append(docs, d), para[:0], size+len(d)
		}
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("data: %s: %w", path, err)
		}
		text := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if strings.TrimSpace(text) == "" {
			flushPara()
		} else {
			para = append(para, text)
			if split == "line" {
				flushPara()
			}
		}
		if err == io.EOF {
			flushPara()
		}
		if size >= batchBytes || err == io.EOF && len(docs) > 0 {
			if ferr := fn(docs); ferr != nil {
				return ferr
			}
			docs, size = docs[:0], 0
		}
		if err == io.EOF {
			return nil
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// copyFile copies src to dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}
