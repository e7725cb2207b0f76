// VocabFromHFJSON: reads a Hugging Face tokenizer.json — a byte-level BPE model, or a
// SentencePiece-style one (load_hfspm.go) — and tokenizer_config.json beside it when present
// (special-token names, add_bos/add_eos).

package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

type hfJSON struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	PostProc     json.RawMessage `json:"post_processor"`
	Model        struct {
		Type         string            `json:"type"`
		Vocab        json.RawMessage   `json:"vocab"` // BPE: token -> id; Unigram: [[piece, score], ...]
		Merges       []json.RawMessage `json:"merges"`
		IgnoreMerges bool              `json:"ignore_merges"`
		ByteFallback bool              `json:"byte_fallback"`
		UnkToken     *string           `json:"unk_token"` // BPE
		UnkID        *int              `json:"unk_id"`    // Unigram
	} `json:"model"`
}

type hfComponent struct {
	Type          string        `json:"type"`
	Normalizers   []hfComponent `json:"normalizers"`
	Pretokenizers []hfComponent `json:"pretokenizers"`
	Pattern       struct {
		Regex  string `json:"Regex"`
		String string `json:"String"`
	} `json:"pattern"`
	UseRegex      *bool  `json:"use_regex"`
	AddPrefixSpc  bool   `json:"add_prefix_space"`
	Prepend       string `json:"prepend"`        // normalizer Prepend
	Content       string `json:"content"`        // normalizer Replace
	Replacement   string `json:"replacement"`    // Metaspace
	PrependScheme string `json:"prepend_scheme"` // Metaspace
	Split         *bool  `json:"split"`          // Metaspace
	Single        []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
	} `json:"single"`
}

// knownSplitRegexes maps tokenizer.json Split patterns to pre-tokenizer names.
var knownSplitRegexes = map[string]string{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: "llama-bpe",
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:      "qwen2",
	`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`:                                          "gpt-2",
}

// VocabFromHFJSON loads a tokenizer.json whose model is byte-level BPE, or SentencePiece-style:
// BPE with byte_fallback, or Unigram, with spaces turned into "▁" (see load_hfspm.go).
func VocabFromHFJSON(path string) (*Vocab, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var h hfJSON
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: invalid JSON: %v", path, err)
	}
	var v *Vocab
	switch {
	case h.Model.Type == "Unigram" || h.Model.Type == "BPE" && h.Model.ByteFallback:
		v, err = spmVocabFromHFJSON(path, &h)
	case h.Model.Type == "BPE":
		v, err = byteLevelVocabFromHFJSON(path, &h)
	default:
		return nil, fmt.Errorf("tokenizer: %s: model.type %q is not supported (BPE or Unigram)", path, h.Model.Type)
	}
	if err != nil {
		return nil, err
	}
	// a TemplateProcessing post-processor that starts with a special token adds BOS
	var post hfComponent
	if len(h.PostProc) > 0 && json.Unmarshal(h.PostProc, &post) == nil {
		for _, p := range append([]hfComponent{post}, post.Pretokenizers...) {
			if p.Type == "TemplateProcessing" && len(p.Single) > 0 && p.Single[0].SpecialToken != nil {
				if id, ok := indexOf(v.Tokens, p.Single[0].SpecialToken.ID); ok {
					v.BOS, v.AddBOS = id, true
				}
			}
		}
	}
	cfg, err := readTokenizerConfig(filepath.Join(filepath.Dir(path), "tokenizer_config.json"))
	if err != nil {
		return nil, err
	}
	cfg.apply(v)
	if v.EOS < 0 {
		for _, name := range []string{"<|end_of_text|>", "<|endoftext|>", "</s>"} {
			if id, ok := indexOf(v.Tokens, name); ok {
				v.EOS = id
				break
			}
		}
	}
	v.applyNameFixups()
	return v, nil
}

// hfMerges reads model.merges, each "a b" or [a, b].
func hfMerges(path string, raws []json.RawMessage) ([]string, error) {
	merges := make([]string, len(raws))
	for i, raw := range raws {
		var s string
		var p []string
		switch {
		case json.Unmarshal(raw, &s) == nil && strings.Count(s, " ") == 1:
			merges[i] = s
		case json.Unmarshal(raw, &p) == nil && len(p) == 2:
			merges[i] = p[0] + " " + p[1]
		default:
			return nil, fmt.Errorf("tokenizer: %s: merge %d (%s) is neither \"a b\" nor [a, b]", path, i, raw)
		}
	}
	return merges, nil
}

// byteLevelVocabFromHFJSON reads the model, normalizer and pre-tokenizer of a byte-level BPE
// tokenizer.json.
func byteLevelVocabFromHFJSON(path string, h *hfJSON) (*Vocab, error) {
	merges, err := hfMerges(path, h.Model.Merges)
	if err != nil {
		return nil, err
	}
	var tokens map[string]int
	if err := json.Unmarshal(h.Model.Vocab, &tokens); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: model.vocab is not a token -> id map: %v", path, err)
	}
	pre, err := hfPreName(h.PreTokenizer)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", path, err)
	}
	normalize, err := hfNormalizer(h.Normalizer)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", path, err)
	}
	v, err := bpeVocab(path, tokens, merges, h.AddedTokens)
	if err != nil {
		return nil, err
	}
	v.Pre, v.Normalize, v.IgnoreMerges = pre, normalize, h.Model.IgnoreMerges
	return v, nil
}

func hfPreName(raw json.RawMessage) (string, error) {
	var c hfComponent
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("no pre_tokenizer (not a byte-level BPE tokenizer)")
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("pre_tokenizer: %v", err)
	}
	if c.Type == "ByteLevel" && (c.UseRegex == nil || *c.UseRegex) {
		return "gpt-2", nil
	}
	if c.Type == "Sequence" && len(c.Pretokenizers) == 2 && c.Pretokenizers[0].Type == "Split" &&
		c.Pretokenizers[1].Type == "ByteLevel" {
		re := c.Pretokenizers[0].Pattern.Regex
		if name, ok := knownSplitRegexes[re]; ok {
			return name, nil
		}
		return "", fmt.Errorf("pre_tokenizer Split regex %q is not one of the supported pre-tokenizers", re)
	}
	return "", fmt.Errorf("unsupported pre_tokenizer %s", raw)
}

func hfNormalizer(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("normalizer: %v", err)
	}
	switch {
	case c.Type == "NFC":
		return "NFC", nil
	case c.Type == "Sequence" && len(c.Normalizers) == 0:
		return "", nil
	case c.Type == "Sequence" && len(c.Normalizers) == 1 && c.Normalizers[0].Type == "NFC":
		return "NFC", nil
	}
	return "", fmt.Errorf("unsupported normalizer %s", raw)
}

// tokenizerConfig is the part of tokenizer_config.json the loaders use.
type tokenizerConfig struct {
	Class              string
	BOS, EOS, PAD, UNK string
	AddBOS, AddEOS     *bool
}

func readTokenizerConfig(path string) (tokenizerConfig, error) {
	var cfg tokenizerConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("tokenizer: %w", err)
	}
	var raw struct {
		Class  string          `json:"tokenizer_class"`
		BOS    json.RawMessage `json:"bos_token"`
		EOS    json.RawMessage `json:"eos_token"`
		PAD    json.RawMessage `json:"pad_token"`
		UNK    json.RawMessage `json:"unk_token"`
		AddBOS *bool           `json:"add_bos_token"`
		AddEOS *bool           `json:"add_eos_token"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return cfg, fmt.Errorf("tokenizer: %s: invalid JSON: %v", path, err)
	}
	name := func(m json.RawMessage) string {
		var s string
		if json.Unmarshal(m, &s) == nil {
			return s
		}
		var o struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(m, &o)
		return o.Content
	}
	cfg = tokenizerConfig{Class: raw.Class, BOS: name(raw.BOS), EOS: name(raw.EOS), PAD: name(raw.PAD),
		UNK: name(raw.UNK), AddBOS: raw.AddBOS, AddEOS: raw.AddEOS}
	return cfg, nil
}

// apply sets the special ids and add flags that the config names.
func (c tokenizerConfig) apply(v *Vocab) {
	for _, x := range []struct {
		name string
		dst  *int
	}{{c.BOS, &v.BOS}, {c.EOS, &v.EOS}, {c.PAD, &v.PAD}, {c.UNK, &v.UNK}} {
		name, dst := x.name, x.dst
		if name == "" {
			continue
		}
		if id, ok := indexOf(v.Tokens, name); ok {
			*dst = id
		}
	}
	if c.AddBOS != nil {
		v.AddBOS = *c.AddBOS && v.BOS >= 0
	}
	if c.AddEOS != nil {
		v.AddEOS = *c.AddEOS && v.EOS >= 0
	}
}
