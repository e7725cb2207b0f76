// The logits command: run a prompt through the model in one batch and write the raw float32
// logits of every position, row-major [prompt tokens][vocab], little-endian, no header (the
// layout of llama.cpp's reference dumps); the prompt ids go to stdout.
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

func init() {
	register("logits", "write the raw logits of every prompt position to a file", runLogits)
}

func runLogits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logits", stderr)
	var mf modelFlags
	mf.register(fs)
	prompt := fs.String("prompt", "", "prompt text")
	out := fs.String("o", "", "output file for the float32 logits")
	noBOS := fs.Bool("no-bos", false, "do not add the BOS token the tokenizer would add")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usagef("-o FILE is required")
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
		return usagef("empty prompt")
	}
	if n := b.Model.Config.CtxLen; n > 0 && len(ids) > n {
		return fmt.Errorf("prompt of %d tokens is longer than the context length %d", len(ids), n)
	}
	cache := b.Model.NewCache(len(ids))
	logits, err := b.Model.Forward(cache, ids, 0, true)
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var buf [4]byte
	for _, v := range logits {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
		w.Write(buf[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = fmt.Sprint(id)
	}
	fmt.Fprintln(stdout, strings.Join(strs, " "))
	fmt.Fprintf(stderr, "wrote %d x %d float32 logits to %s\n", len(ids), b.Model.Config.Vocab, *out)
	return nil
}
