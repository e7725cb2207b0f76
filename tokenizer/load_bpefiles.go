// Shared construction of byte-level BPE vocabularies from Hugging Face style pieces (a
// token -> id map, merges, added tokens), plus VocabFromGPT2Files for vocab.json + merges.txt
// (+ added_tokens.json and tokenizer_config.json when they sit beside them).

package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
	LStrip  bool   `json:"lstrip"`
	RStrip  bool   `json:"rstrip"`
}

// bpeVocab lays out a byte-level BPE Vocab from a token map, merges and added tokens. Ids not
// used by any token become unused placeholders "[PADn]". src names the origin for errors.
func bpeVocab(src string, vocab map[string]int, merges []string, added []addedToken) (*Vocab, error) {
	n := 0
	for tok, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer: %s: token %q has negative id %d", src, tok, id)
		}
		n = max(n, id+1)
	}
	for _, a := range added {
		if a.ID < 0 {
			return nil, fmt.Errorf("tokenizer: %s: added token %q has negative id %d", src, a.Content, a.ID)
		}
		n = max(n, a.ID+1)
	}
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: %s: empty vocabulary", src)
	}
	if n > 1<<24 {
		return nil, fmt.Errorf("tokenizer: %s: implausible vocabulary size %d", src, n)
	}
	v := &Vocab{Model: "gpt2", Pre: "gpt-2", Tokens: make([]string, n), Types: make([]int32, n),
		Merges: merges, BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	set := make([]bool, n)
	for tok, id := range vocab {
		if set[id] {
			return nil, fmt.Errorf("tokenizer: %s: id %d used by %q and %q", src, id, v.Tokens[id], tok)
		}
		v.Tokens[id], v.Types[id], set[id] = tok, TypeNormal, true
	}
	for _, a := range added {
		v.Tokens[a.ID], set[a.ID] = a.Content, true
		v.Types[a.ID] = TypeUserDefined
		if a.Special {
			v.Types[a.ID] = TypeControl
		}
		v.setStrip(a)
	}
	for i := range v.Tokens {
		if !set[i] {
			v.Tokens[i], v.Types[i] = fmt.Sprintf("[PAD%d]", i), TypeUnused
		}
	}
	return v, nil
}

// setStrip records the lstrip/rstrip flags of an added token.
func (v *Vocab) setStrip(a addedToken) {
	if a.LStrip {
		if v.LStrip == nil {
			v.LStrip = map[int]bool{}
		}
		v.LStrip[a.ID] = true
	}
	if a.RStrip {
		if v.RStrip == nil {
			v.RStrip = map[int]bool{}
		}
		v.RStrip[a.ID] = true
	}
}

// llama3Specials are Llama 3.x's 256 special tokens after the 128000 tiktoken ranks.
func llama3Specials() []addedToken {
	names := map[int]string{128000: "<|begin_of_text|>", 128001: "<|end_of_text|>",
		128004: "<|finetune_right_pad_id|>", 128006: "<|start_header_id|>", 128007: "<|end_header_id|>",
		128008: "<|eom_id|>", 128009: "<|eot_id|>", 128010: "<|python_tag|>"}
	var out []addedToken
	reserved := 0
	for id := 128000; id < 128256; id++ {
		name, ok := names[id]
		if !ok {
			name = fmt.Sprintf("<|reserved_special_token_%d|>", reserved)
			reserved++
		}
		out = append(out, addedToken{ID: id, Content: name, Special: true})
	}
	return out
}

// VocabFromGPT2Files loads vocab.json (token -> id) and merges.txt ("a b" per line, an optional
// "#version" first line). An added_tokens.json beside them adds special tokens. The
// pre-tokenizer is inferred: "qwen2" when a tokenizer_config.json beside them names a Qwen2
// tokenizer class, "llama-bpe" (with Llama 3's 256 special tokens added) for a 128000-token
// vocabulary, else "gpt-2". Set Vocab.Pre before New to override.
func VocabFromGPT2Files(vocabJSON, mergesTXT string) (*Vocab, error) {
	b, err := os.ReadFile(vocabJSON)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var vocab map[string]int
	if err := json.Unmarshal(b, &vocab); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: not a JSON token->id map: %v", vocabJSON, err)
	}
	mb, err := os.ReadFile(mergesTXT)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var merges []string
	for i, line := range strings.Split(strings.ReplaceAll(string(mb), "\r\n", "\n"), "\n") {
		if line == "" || i == 0 && strings.HasPrefix(line, "#version") {
			continue
		}
		if strings.Count(line, " ") != 1 {
			return nil, fmt.Errorf("tokenizer: %s line %d: merge %q is not two space-separated pieces", mergesTXT, i+1, line)
		}
		merges = append(merges, line)
	}
	dir := filepath.Dir(vocabJSON)
	var added []addedToken
	if ab, err := os.ReadFile(filepath.Join(dir, "added_tokens.json")); err == nil {
		var m map[string]int
		if err := json.Unmarshal(ab, &m); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %v", filepath.Join(dir, "added_tokens.json"), err)
		}
		for c, id := range m {
			added = append(added, addedToken{ID: id, Content: c, Special: true})
		}
		sort.Slice(added, func(i, j int) bool { return added[i].ID < added[j].ID })
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	cfg, err := readTokenizerConfig(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, err
	}
	pre := "gpt-2"
	switch {
	case strings.Contains(cfg.Class, "Qwen2"):
		pre = "qwen2"
	case len(vocab) == 128000 && len(added) == 0:
		pre = "llama-bpe"
		added = llama3Specials()
	}
	v, err := bpeVocab(vocabJSON, vocab, merges, added)
	if err != nil {
		return nil, err
	}
	v.Pre = pre
	switch pre {
	case "qwen2":
		v.Normalize = "NFC"
	case "llama-bpe":
		v.IgnoreMerges = true
		v.BOS, _ = indexOf(v.Tokens, "<|begin_of_text|>")
		v.EOS, _ = indexOf(v.Tokens, "<|end_of_text|>")
		v.EOT, _ = indexOf(v.Tokens, "<|eot_id|>")
		v.AddBOS = true
	case "gpt-2":
		v.BOS, _ = indexOf(v.Tokens, "<|endoftext|>")
		v.EOS = v.BOS
	}
	// GPT-2's vocab.json lists <|endoftext|> among the ordinary tokens; it is a control token.
	if id, ok := indexOf(v.Tokens, "<|endoftext|>"); ok {
		v.Types[id] = TypeControl
	}
	cfg.apply(v)
	return v, nil
}

// indexOf returns the first index of s in list, or -1.
func indexOf(list []string, s string) (int, bool) {
	for i, x := range list {
		if x == s {
			return i, true
		}
	}
	return -1, false
}
