// This file implements Train (word counts -> merges -> a tokenizer.Vocab) and WriteDir
// (tokenizer.json + tokenizer_config.json).

package bpetrain

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Options configures Train.
type Options struct {
	VocabSize    int      // total tokens: special tokens + 256 bytes + merges
	MinFrequency int64    // a pair seen fewer times than this is never merged (training stops early)
	Specials     []string // special tokens, ids 0, 1, ...; the first is BOS and EOS
}

// Result is a trained vocabulary and how training went.
type Result struct {
	Vocab   *tokenizer.Vocab
	Words   int   // distinct pre-tokens counted
	Merges  int   // merges learned
	LastMin int64 // count of the last merged pair (0 without merges)
}

// Train learns merges from word counts (CountWords) until the vocabulary holds o.VocabSize
// tokens, or no pair occurs o.MinFrequency times.
//
// Token ids: the special tokens first (0, 1, ...), then the 256 bytes in byte order, then one
// token per merge in the order learned (a merge whose result is already a token adds none).
// The vocabulary is GPT-2's kind: byte-level, "gpt-2" pre-tokenizer, BOS = EOS = the first
// special token, added as BOS when encoding with special tokens.
func Train(counts map[string]int64, o Options) (*Result, error) {
	if len(o.Specials) == 0 {
		return nil, fmt.Errorf("bpetrain: at least one special token (BOS/EOS, e.g. <|endoftext|>) is needed")
	}
	for i, s := range o.Specials {
		if s == "" || slices.Contains(o.Specials[:i], s) {
			return nil, fmt.Errorf("bpetrain: special token %q is empty or repeated", s)
		}
	}
	base := len(o.Specials) + 256
	if o.VocabSize < base {
		return nil, fmt.Errorf("bpetrain: vocab size %d is below %d (%d special tokens + 256 bytes)", o.VocabSize, base, len(o.Specials))
	}
	if o.VocabSize > 1<<24 {
		return nil, fmt.Errorf("bpetrain: vocab size %d is implausibly large", o.VocabSize)
	}
	m := newMerger(counts)
	res := &Result{Words: len(counts)}
	var merges []string
	for step := 1; len(o.Specials)+len(m.syms) < o.VocabSize; step++ {
		p, n, ok := m.best()
		if !ok || n < max(o.MinFrequency, 1) {
			break
		}
		a, b := p.split()
		merges = append(merges, tokenizer.ByteLevelSpelling(m.syms[a])+" "+tokenizer.ByteLevelSpelling(m.syms[b]))
		m.merge(p, step)
		res.LastMin = n
	}
	res.Merges = len(merges)

	v := &tokenizer.Vocab{Model: "gpt2", Pre: "gpt-2", Merges: merges, BOS: 0, EOS: 0, UNK: -1, PAD: -1, EOT: -1, AddBOS: true}
	if merges == nil {
		v.Merges = []string{}
	}
	for _, s := range o.Specials {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, tokenizer.TypeControl)
	}
	for _, s := range m.syms {
		v.Tokens = append(v.Tokens, tokenizer.ByteLevelSpelling(s))
		v.Types = append(v.Types, tokenizer.TypeNormal)
	}
	res.Vocab = v
	return res, nil
}

// WriteDir writes v as dir/tokenizer.json and dir/tokenizer_config.json (dir is created). Each
// file is replaced atomically. Unless overwrite is set, a dir that already holds either file is
// refused (it may be a model's tokenizer).
func WriteDir(dir string, v *tokenizer.Vocab, overwrite bool) error {
	js, err := tokenizer.MarshalHFJSON(v)
	if err != nil {
		return err
	}
	if !overwrite {
		for _, f := range []string{hfdir.TokenizerJSONFile, hfdir.TokenizerConfigFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return fmt.Errorf("bpetrain: %s already exists (overwrite it with --force)", filepath.Join(dir, f))
			}
		}
	}
	err = atomicfile.Write(filepath.Join(dir, hfdir.TokenizerJSONFile), func(w io.Writer) error {
		_, err := w.Write(js)
		return err
	})
	if err != nil {
		return fmt.Errorf("bpetrain: %w", err)
	}
	return hfdir.WriteTokenizerConfig(filepath.Join(dir, hfdir.TokenizerConfigFile), tokenizer.HFConfig(v, "", 0))
}
