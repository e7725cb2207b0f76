// VocabFromGGUF: reads the tokenizer.ggml.* keys of a GGUF file, with llama.cpp's defaults for
// keys that are absent and its name-based fix-ups (EOT/EOG tokens become control tokens,
// Phi-3's special tokens strip white space on their right).

package tokenizer

import (
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/format/gguf"
)

// eotNames are the texts llama.cpp recognises as end-of-turn when no eot_token_id is given.
var eotNames = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
	"<EOT>", "<｜end▁of▁sentence｜>"}

// VocabFromGGUF builds a Vocab from f's tokenizer.ggml.* metadata.
func VocabFromGGUF(f *gguf.File) (*Vocab, error) {
	name := f.Path
	model, ok := f.String("tokenizer.ggml.model")
	if !ok {
		return nil, fmt.Errorf("tokenizer: %s: no tokenizer.ggml.model key", name)
	}
	tokens, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(tokens) == 0 {
		return nil, fmt.Errorf("tokenizer: %s: missing or empty tokenizer.ggml.tokens", name)
	}
	v := &Vocab{Model: model, Tokens: append([]string(nil), tokens...), BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	if s, ok := f.Float32s("tokenizer.ggml.scores"); ok {
		v.Scores = append([]float32(nil), s...)
	}
	if ty, ok := f.Int32s("tokenizer.ggml.token_type"); ok {
		v.Types = append([]int32(nil), ty...)
	}
	if (v.Scores != nil && len(v.Scores) != len(v.Tokens)) || (v.Types != nil && len(v.Types) != len(v.Tokens)) {
		return nil, fmt.Errorf("tokenizer: %s: %d tokens but %d scores and %d token types", name,
			len(v.Tokens), len(v.Scores), len(v.Types))
	}
	pre, _ := f.String("tokenizer.ggml.pre")
	switch model {
	case "llama":
		v.Pre, v.BOS, v.EOS, v.UNK = "default", 1, 2, 0
		v.AddBOS, v.AddSpacePrefix = true, true
	case "gpt2":
		v.Pre, v.BOS, v.EOS = pre, 11, 11
		if v.Pre == "" {
			v.Pre = "default"
		}
		switch v.Pre {
		case "llama3", "llama-v3", "llama-bpe", "falcon3", "tekken":
			v.IgnoreMerges, v.AddBOS = true, true
		case "chameleon":
			v.AddBOS = true
		}
		merges, ok := f.Strings("tokenizer.ggml.merges")
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: gpt2 tokenizer without tokenizer.ggml.merges", name)
		}
		v.Merges = append([]string(nil), merges...)
	case "t5":
		// SentencePiece Unigram; llama.cpp's defaults (T5's ids)
		if _, ok := f.Get("tokenizer.ggml.precompiled_charsmap"); ok {
			return nil, fmt.Errorf("tokenizer: %s: a Unigram vocabulary with a precompiled_charsmap normalizer is not supported", name)
		}
		v.Pre, v.EOS, v.UNK, v.PAD = "default", 1, 2, 0
		v.AddSpacePrefix = true
	case "bert":
		// [CLS] text [SEP]: the separator plays the role of EOS (llama.cpp appends it).
		v.Pre, v.BOS, v.EOS, v.UNK, v.PAD = "default", 101, 102, 100, 0
		v.AddBOS, v.AddEOS = true, true
		if id, ok := f.Uint("tokenizer.ggml.seperator_token_id"); ok && id < uint64(len(v.Tokens)) {
			v.EOS = int(id)
		}
	default:
		return nil, fmt.Errorf("tokenizer: %s: unsupported tokenizer.ggml.model %q", name, model)
	}
	for key, dst := range map[string]*int{
		"tokenizer.ggml.bos_token_id": &v.BOS, "tokenizer.ggml.eos_token_id": &v.EOS,
		"tokenizer.ggml.unknown_token_id": &v.UNK, "tokenizer.ggml.padding_token_id": &v.PAD,
		"tokenizer.ggml.eot_token_id": &v.EOT,
	} {
		if id, ok := f.Uint(key); ok {
			if id >= uint64(len(v.Tokens)) {
				return nil, fmt.Errorf("tokenizer: %s: %s = %d is not below the vocabulary size %d", name, key, id, len(v.Tokens))
			}
			*dst = int(id)
		}
	}
	if b, ok := f.Bool("tokenizer.ggml.add_bos_token"); ok {
		v.AddBOS = b
	}
	if b, ok := f.Bool("tokenizer.ggml.add_eos_token"); ok {
		v.AddEOS = b
	}
	if b, ok := f.Bool("tokenizer.ggml.add_space_prefix"); ok {
		v.AddSpacePrefix = b
	}
	v.applyNameFixups()
	general, _ := f.String("general.name")
	if g := strings.ToLower(general); strings.Contains(g, "phi-3") || strings.Contains(g, "phi3") {
		v.phi3Strip()
	}
	return v, nil
}

// applyNameFixups finds EOT by name when it is not set and marks end-of-generation tokens as
// control tokens, as llama.cpp does.
func (v *Vocab) applyNameFixups() {
	ids := map[string]int{}
	for i, s := range v.Tokens {
		ids[s] = i
	}
	if v.EOT < 0 {
		for _, n := range eotNames {
			if id, ok := ids[n]; ok {
				v.EOT = id
				break
			}
		}
	}
	if v.Types == nil {
		return
	}
	for _, n := range append(append([]string{}, eotNames...), eogNames...) {
		if id, ok := ids[n]; ok {
			v.Types[id] = TypeControl
		}
	}
}

// phi3Strip gives every special token right-strip, except <unk>, <s>, <|endoftext|>.
func (v *Vocab) phi3Strip() {
	v.RStrip = map[int]bool{}
	for i := range v.Tokens {
		switch v.tokenType(i) {
		case TypeControl, TypeUserDefined, TypeUnknown:
			v.RStrip[i] = true
		}
	}
	for i, s := range v.Tokens {
		switch s {
		case "</s>":
			v.RStrip[i] = true
		case "<unk>", "<s>", "<|endoftext|>":
			delete(v.RStrip, i)
		}
	}
}
