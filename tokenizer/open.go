// OpenVocab: a vocabulary from any file or directory llmcloud reads models or tokenizers
// from — a GGUF file's tokenizer.ggml.* keys, a Hugging Face directory (tokenizer.json, or
// vocab.json + merges.txt), a tokenizer.json, a SentencePiece tokenizer.model, a llama2.c
// tokenizer.bin, or a llama2.c checkpoint with its tokenizer.bin beside it — without loading
// any weights, so that clients that only count tokens need no compute code.

package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
)

// OpenVocab reads the vocabulary at path and returns it with the chat template found with it.
func OpenVocab(path string) (*Vocab, string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("tokenizer: %w", err)
	}
	if fi.IsDir() {
		return hfDirVocab(path)
	}
	head := make([]byte, 4)
	if f, err := os.Open(path); err == nil {
		f.Read(head)
		f.Close()
	}
	switch {
	case bytes.Equal(head, []byte("GGUF")):
		f, err := gguf.Open(path)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		v, err := VocabFromGGUF(f)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		tmpl, _ := f.String("tokenizer.chat_template")
		return v, tmpl, nil
	case filepath.Ext(path) == ".json":
		v, err := VocabFromHFJSON(path)
		if err != nil {
			return nil, "", err
		}
		tmpl := ""
		if tc, err := hfdir.ReadTokenizerConfig(filepath.Join(filepath.Dir(path), hfdir.TokenizerConfigFile)); err == nil && tc != nil {
			tmpl = tc.ChatTemplate
		}
		return v, tmpl, nil
	case filepath.Ext(path) == ".model":
		v, err := VocabFromSentencePiece(path)
		return v, "", err
	case filepath.Ext(path) == ".bin":
		v, err := VocabFromLlama2C(path, 0)
		if err != nil {
			// not a tokenizer.bin: a llama2.c checkpoint, whose tokenizer sits beside it
			tok, ferr := FindLlama2CTokenizer(path)
			if ferr != nil || tok == path {
				return nil, "", err
			}
			v, err = VocabFromLlama2C(tok, 0)
		}
		return v, "", err
	}
	return nil, "", fmt.Errorf("%s: not a model or tokenizer file (GGUF, a Hugging Face directory, tokenizer.json, tokenizer.model, a llama2.c checkpoint or tokenizer.bin)", path)
}

// FindLlama2CTokenizer looks beside a llama2.c checkpoint for tokenizer.bin, or a single
// tok*.bin.
func FindLlama2CTokenizer(path string) (string, error) {
	dir := filepath.Dir(path)
	p := filepath.Join(dir, "tokenizer.bin")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "tok*.bin"))
	if len(matches) == 1 {
		return matches[0], nil
	}
	return "", fmt.Errorf("%s: llama2.c checkpoint has no tokenizer.bin beside it; pass --tokenizer FILE", path)
}

func hfDirVocab(dir string) (*Vocab, string, error) {
	// A tokenizer-only directory (a tokenizer repository, or vocab.json + merges.txt) has no
	// config.json: read its tokenizer files directly.
	tmpl := ""
	if tc, err := hfdir.ReadTokenizerConfig(filepath.Join(dir, hfdir.TokenizerConfigFile)); err == nil && tc != nil {
		tmpl = tc.ChatTemplate
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	if b, err := os.ReadFile(filepath.Join(dir, hfdir.ChatTemplateFile)); err == nil && tmpl == "" {
		tmpl = string(b)
	}
	tj := filepath.Join(dir, hfdir.TokenizerJSONFile)
	vj, mt := filepath.Join(dir, hfdir.VocabJSONFile), filepath.Join(dir, hfdir.MergesTXTFile)
	var v *Vocab
	var err error
	switch {
	case exists(tj):
		v, err = VocabFromHFJSON(tj)
	case exists(vj) && exists(mt):
		v, err = VocabFromGPT2Files(vj, mt)
	default:
		return nil, "", fmt.Errorf("%s: no tokenizer (tokenizer.json, or vocab.json + merges.txt)", dir)
	}
	return v, tmpl, err
}

func exists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
