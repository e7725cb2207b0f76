// This file opens a tokenizer on its own (--tokenizer FILE): from a tokenizer.json, a Hugging
// Face directory, a GGUF file's vocabulary, or a llama2.c tokenizer.bin.
package loader

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// OpenVocab reads the vocabulary at path and returns it with the chat template found beside it.
func OpenVocab(path string) (*tokenizer.Vocab, string, error) {
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
		v, err := tokenizer.VocabFromGGUF(f)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		tmpl, _ := f.String("tokenizer.chat_template")
		return v, tmpl, nil
	case filepath.Ext(path) == ".json":
		v, err := tokenizer.VocabFromHFJSON(path)
		if err != nil {
			return nil, "", err
		}
		tmpl := ""
		if tc, err := hfdir.ReadTokenizerConfig(filepath.Join(filepath.Dir(path), hfdir.TokenizerConfigFile)); err == nil && tc != nil {
			tmpl = tc.ChatTemplate
		}
		return v, tmpl, nil
	case filepath.Ext(path) == ".bin":
		v, err := tokenizer.VocabFromLlama2C(path, 0)
		return v, "", err
	}
	return nil, "", fmt.Errorf("%s: not a tokenizer file (tokenizer.json, tokenizer.bin, a GGUF file or a Hugging Face directory)", path)
}

// OpenTokenizer is OpenVocab followed by tokenizer.New.
func OpenTokenizer(path string) (*tokenizer.Tokenizer, string, error) {
	v, tmpl, err := OpenVocab(path)
	if err != nil {
		return nil, "", err
	}
	t, err := tokenizer.New(v)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return t, tmpl, nil
}

func hfDirVocab(dir string) (*tokenizer.Vocab, string, error) {
	d, err := hfdir.Load(dir)
	if err != nil {
		return nil, "", err
	}
	tmpl := ""
	if d.TokenizerConfig != nil {
		tmpl = d.TokenizerConfig.ChatTemplate
	}
	var v *tokenizer.Vocab
	switch {
	case d.TokenizerJSON != "":
		v, err = tokenizer.VocabFromHFJSON(d.TokenizerJSON)
	case d.VocabJSON != "" && d.MergesTXT != "":
		v, err = tokenizer.VocabFromGPT2Files(d.VocabJSON, d.MergesTXT)
	default:
		return nil, "", fmt.Errorf("%s: no tokenizer (tokenizer.json, or vocab.json + merges.txt)", dir)
	}
	return v, tmpl, err
}
