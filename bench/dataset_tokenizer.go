// HFTokens: --tokenizer PATH, a real vocabulary for counting prompt and output tokens and for
// random prompts made of token ids (as vLLM's random dataset makes them).

package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/llmcloud/llmcloud/tokenizer"
)

// HFTokens counts with the tokenizer of any model or tokenizer file llmcloud reads (see
// tokenizer.OpenVocab: GGUF, a Hugging Face directory, tokenizer.json, tokenizer.model, a
// llama2.c checkpoint or tokenizer.bin); no weights are loaded.
type HFTokens struct {
	Tok    *tokenizer.Tokenizer
	Path   string
	normal []int // ids of ordinary tokens (random prompts never contain control tokens)
}

// LoadTokenizer opens path (see HFTokens).
func LoadTokenizer(path string) (*HFTokens, error) {
	v, _, err := tokenizer.OpenVocab(path)
	if err != nil {
		return nil, fmt.Errorf("bench: tokenizer: %w", err)
	}
	t, err := tokenizer.New(v)
	if err != nil {
		return nil, err
	}
	h := &HFTokens{Tok: t, Path: path}
	for id := range v.Tokens {
		if (v.Types == nil || v.Types[id] == tokenizer.TypeNormal) && len(t.Piece(id)) > 0 {
			h.normal = append(h.normal, id)
		}
	}
	if len(h.normal) == 0 {
		return nil, fmt.Errorf("bench: tokenizer %s has no ordinary tokens", path)
	}
	return h, nil
}

func (h *HFTokens) Name() string { return h.Path }

func (h *HFTokens) Count(text string) int { return len(h.Tok.Encode(text, false, false)) }

// Random draws n ordinary token ids, decodes them and re-encodes the text (which may merge or
// split tokens), then trims or tops up the ids until the text encodes to n tokens (or close,
// after a few rounds). It returns the text and its real token count.
func (h *HFTokens) Random(rng *rand.Rand, n int) (string, int) {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = h.normal[rng.IntN(len(h.normal))]
	}
	text := h.Tok.Decode(ids)
	for range 8 {
		got := h.Tok.Encode(text, false, false)
		switch {
		case len(got) == n:
			return text, n
		case len(got) > n:
			ids = got[:n]
		default:
			ids = got
			for len(ids) < n {
				ids = append(ids, h.normal[rng.IntN(len(h.normal))])
			}
		}
		text = h.Tok.Decode(ids)
	}
	return text, h.Count(text)
}
