// Package bpetrain trains byte-level BPE tokenizers (GPT-2 style) from text and writes them as
// Hugging Face tokenizer.json + tokenizer_config.json (see docs/tokenizer-training.md).
//
// This file implements the first pass: reading the input in chunks, splitting out the special
// tokens, pre-tokenizing with the GPT-2 pre-tokenizer of package tokenizer and counting how
// often each pre-token (a "word") occurs. Chunks are counted on all CPUs; the result does not
// depend on how many.
package bpetrain

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/llmcloud/llmcloud/tokenizer"
)

// chunkBytes is roughly how much text one counting task gets.
var chunkBytes = 1 << 20 // a variable so tests can make chunks small

// CountWords returns the frequency of every pre-token of the files (pre-tokenizer pre, e.g.
// "gpt-2"). Occurrences of the special tokens are cut out of the text first and not counted.
func CountWords(files []string, pre string, specials []string) (map[string]int64, error) {
	if _, err := tokenizer.PreTokenize(pre, ""); err != nil {
		return nil, err
	}
	workers := runtime.GOMAXPROCS(0)
	chunks := make(chan string, workers)
	counts := make([]map[string]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		counts[w] = map[string]int64{}
		wg.Go(func() {
			for c := range chunks {
				countChunk(c, pre, specials, counts[w])
			}
		})
	}
	var err error
	for _, f := range files {
		if err = readChunks(f, chunks); err != nil {
			break
		}
	}
	close(chunks)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	total := counts[0]
	for _, m := range counts[1:] {
		for w, n := range m {
			total[w] += n
		}
	}
	return total, nil
}

// countChunk adds the pre-tokens of text, outside the special tokens, to counts.
func countChunk(text, pre string, specials []string, counts map[string]int64) {
	for _, part := range splitSpecials(text, specials) {
		pieces, _ := tokenizer.PreTokenize(pre, part) // pre was checked by CountWords
		for _, p := range pieces {
			counts[p]++
		}
	}
}

// splitSpecials returns the parts of text between occurrences of any special token (the
// earliest occurrence first, the longest special on a tie).
func splitSpecials(text string, specials []string) []string {
	var parts []string
	for {
		at, n := -1, 0
		for _, s := range specials {
			if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at || i == at && len(s) > n) {
				at, n = i, len(s)
			}
		}
		if at < 0 {
			return append(parts, text)
		}
		parts = append(parts, text[:at])
		text = text[at+n:]
	}
}

// readChunks sends the text of path in chunks of about chunkBytes. A chunk ends with a "\n"
// that sits between two characters that are not white space: the GPT-2 pre-tokenizer makes that
// "\n" a piece of its own whether or not text follows (no pattern joins white space to a letter,
// digit or symbol after it, and a one-character white-space run is matched whole), so counting
// chunk by chunk gives the same pre-tokens as the whole text would.
func readChunks(path string, out chan<- string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("bpetrain: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 0, 2*chunkBytes)
	for eof := false; !eof; {
		n, err := io.ReadFull(f, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			eof = true
		default:
			return fmt.Errorf("bpetrain: %s: %w", path, err)
		}
		cut := len(buf)
		if !eof {
			cut = safeCut(buf)
		}
		if cut == 0 { // no safe cut in the whole buffer: grow it
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
			continue
		}
		if cut > 0 {
			out <- string(buf[:cut])
		}
		rest := copy(buf, buf[cut:])
		buf = buf[:rest]
	}
	return nil
}

// safeCut is the last position in b just after a "\n" whose neighbours are both plain: ASCII
// and not white space (a multi-byte character could be Unicode white space), or 0 if there is
// none.
func safeCut(b []byte) int {
	plain := func(c byte) bool { return c < 0x80 && !isASCIISpace(c) }
	for i := len(b) - 2; i >= 1; i-- {
		i = bytes.LastIndexByte(b[:i+1], '\n')
		if i < 1 {
			return 0
		}
		if plain(b[i-1]) && plain(b[i+1]) {
			return i + 1
		}
	}
	return 0
}

func isASCIISpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
