// This file opens a tokenizer on its own (--tokenizer FILE): from a tokenizer.json, a Hugging
// Face directory, a GGUF file's vocabulary, a SentencePiece tokenizer.model, or a llama2.c
// tokenizer.bin (tokenizer.OpenVocab).
package loader

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tokenizer"
)

// OpenVocab reads the vocabulary at path and returns it with the chat template found beside it
// (see tokenizer.OpenVocab).
func OpenVocab(path string) (*tokenizer.Vocab, string, error) { return tokenizer.OpenVocab(path) }

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
