// SentencePiece-style tokenizer.json: the model is BPE with byte_fallback (Llama 2, Mistral,
// TinyLlama, Gemma) or Unigram (T5-like sentencepiece conversions), and spaces become "▁"
// either by the normalizer (Prepend("▁") + Replace(" ", "▁"), or Replace alone) or by the
// Metaspace pre-tokenizer. Both become a "llama" (BPE) or "t5" (Unigram) Vocab; a BPE
// vocabulary keeps its merges, which decide the merge order as in Hugging Face (the scores,
// needed only for GGUF, are made from the merge ranks).

package tokenizer

import (
	"encoding/json"
	"fmt"
	"sort"
)

// hfSpaces reads how the normalizer and pre-tokenizer of a SentencePiece-style tokenizer.json
// treat spaces, into v's AddSpacePrefix, Metaspace and MetaspaceSplit.
func hfSpaces(v *Vocab, normalizer, pre json.RawMessage) error {
	null := func(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }
	replace := false
	if !null(normalizer) {
		var c hfComponent
		if err := json.Unmarshal(normalizer, &c); err != nil {
			return fmt.Errorf("normalizer: %v", err)
		}
		list := []hfComponent{c}
		if c.Type == "Sequence" {
			list = c.Normalizers
		}
		for i, n := range list {
			switch {
			case n.Type == "Prepend" && n.Prepend == spmSpace && i == 0:
				v.AddSpacePrefix = true
			case n.Type == "Replace" && n.Pattern.String == " " && n.Content == spmSpace && !replace:
				replace = true
			default:
				return fmt.Errorf("unsupported normalizer %s (SentencePiece-style files: Prepend(\"▁\") and Replace(\" \", \"▁\"))", normalizer)
			}
		}
		if !replace && len(list) > 0 {
			return fmt.Errorf("unsupported normalizer %s: Prepend without Replace(\" \", \"▁\")", normalizer)
		}
	}
	if null(pre) {
		if !replace {
			return fmt.Errorf("neither a Replace(\" \", \"▁\") normalizer nor a Metaspace pre-tokenizer")
		}
		return nil
	}
	var c hfComponent
	if err := json.Unmarshal(pre, &c); err != nil {
		return fmt.Errorf("pre_tokenizer: %v", err)
	}
	if c.Type == "Sequence" && len(c.Pretokenizers) == 1 {
		c = c.Pretokenizers[0]
	}
	if replace && c.Type == "Split" && c.Pattern.String == " " {
		return nil // Gemma: a split at spaces, of which the normalizer left none
	}
	if c.Type != "Metaspace" || replace || (c.Replacement != "" && c.Replacement != spmSpace) {
		return fmt.Errorf("unsupported pre_tokenizer %s (SentencePiece-style files: Metaspace with \"▁\", or none)", pre)
	}
	switch c.PrependScheme {
	case "first", "always", "never":
		v.Metaspace = c.PrependScheme
	case "":
		// before prepend_scheme: add_prefix_space
		v.Metaspace = "never"
		if c.AddPrefixSpc {
			v.Metaspace = "always"
		}
	default:
		return fmt.Errorf("unsupported Metaspace prepend_scheme %q", c.PrependScheme)
	}
	v.AddSpacePrefix = v.Metaspace != "never"
	v.MetaspaceSplit = c.Split == nil || *c.Split
	return nil
}

// spmVocabFromHFJSON builds a "llama" or "t5" Vocab from a SentencePiece-style tokenizer.json.
func spmVocabFromHFJSON(path string, h *hfJSON) (*Vocab, error) {
	v := &Vocab{Model: "llama", Pre: "default", BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	var scores []float64
	switch h.Model.Type {
	case "BPE":
		var tokens map[string]int
		if err := json.Unmarshal(h.Model.Vocab, &tokens); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: model.vocab is not a token -> id map: %v", path, err)
		}
		merges, err := hfMerges(path, h.Model.Merges)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, id := range tokens {
			n = max(n, id+1)
		}
		for _, a := range h.AddedTokens {
			n = max(n, a.ID+1)
		}
		if n > 1<<24 {
			return nil, fmt.Errorf("tokenizer: %s: implausible vocabulary size %d", path, n)
		}
		v.Tokens = make([]string, n)
		set := make([]bool, n)
		for tok, id := range tokens {
			if id < 0 {
				return nil, fmt.Errorf("tokenizer: %s: token %q has negative id %d", path, tok, id)
			}
			if set[id] {
				return nil, fmt.Errorf("tokenizer: %s: id %d used by %q and %q", path, id, v.Tokens[id], tok)
			}
			v.Tokens[id], set[id] = tok, true
		}
		v.Merges = merges
		if h.Model.UnkToken != nil {
			if id, ok := tokens[*h.Model.UnkToken]; ok {
				v.UNK = id
			}
		}
		for _, a := range h.AddedTokens {
			if a.ID < 0 || a.ID >= n {
				return nil, fmt.Errorf("tokenizer: %s: added token %q has bad id %d", path, a.Content, a.ID)
			}
			v.Tokens[a.ID], set[a.ID] = a.Content, true
		}
		for i := range v.Tokens {
			if !set[i] {
				return nil, fmt.Errorf("tokenizer: %s: no token has id %d", path, i)
			}
		}
	case "Unigram":
		v.Model = "t5"
		var pieces [][2]json.RawMessage
		if err := json.Unmarshal(h.Model.Vocab, &pieces); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: Unigram model.vocab is not a list of [piece, score]: %v", path, err)
		}
		v.Tokens = make([]string, len(pieces))
		scores = make([]float64, len(pieces))
		for i, p := range pieces {
			if err := json.Unmarshal(p[0], &v.Tokens[i]); err != nil {
				return nil, fmt.Errorf("tokenizer: %s: Unigram piece %d: %v", path, i, err)
			}
			if err := json.Unmarshal(p[1], &scores[i]); err != nil {
				return nil, fmt.Errorf("tokenizer: %s: Unigram score %d: %v", path, i, err)
			}
		}
		if u := h.Model.UnkID; u != nil {
			if *u < 0 || *u >= len(v.Tokens) {
				return nil, fmt.Errorf("tokenizer: %s: unk_id %d out of range", path, *u)
			}
			v.UNK = *u
		}
		for _, a := range h.AddedTokens {
			if a.ID < 0 || a.ID >= len(v.Tokens) || v.Tokens[a.ID] != a.Content {
				return nil, fmt.Errorf("tokenizer: %s: added token %q (id %d) is not that vocabulary piece", path, a.Content, a.ID)
			}
		}
	}
	if len(v.Tokens) == 0 {
		return nil, fmt.Errorf("tokenizer: %s: empty vocabulary", path)
	}
	if err := hfSpaces(v, h.Normalizer, h.PreTokenizer); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %v", path, err)
	}
	// token types: added tokens are control (special) or user-defined; <0xXX> pieces are bytes
	v.Types = make([]int32, len(v.Tokens))
	for i, s := range v.Tokens {
		v.Types[i] = TypeNormal
		if h.Model.ByteFallback && isBytePiece(s) {
			v.Types[i] = TypeByte
		}
	}
	for _, a := range h.AddedTokens {
		v.Types[a.ID] = TypeUserDefined
		if a.Special {
			v.Types[a.ID] = TypeControl
		}
		v.setStrip(a)
	}
	if v.UNK >= 0 {
		v.Types[v.UNK] = TypeUnknown
	}
	if v.Model == "llama" {
		scores = mergeScores(v)
	}
	v.Scores = make([]float32, len(v.Tokens))
	for i, s := range scores {
		v.Scores[i] = float32(s)
	}
	for _, name := range []struct {
		s   string
		dst *int
	}{{"<s>", &v.BOS}, {"</s>", &v.EOS}} {
		if id, ok := indexOf(v.Tokens, name.s); ok {
			*name.dst = id
		}
	}
	return v, nil
}

// mergeScores gives every token that a merge makes the score -(rank of the first merge making
// it), and every other token 0, so that llama.cpp's score-ordered merge of a GGUF written from
// v follows the merge order.
func mergeScores(v *Vocab) []float64 {
	ids := make(map[string]int, len(v.Tokens))
	for i, s := range v.Tokens {
		ids[s] = i
	}
	scores := make([]float64, len(v.Tokens))
	done := make([]bool, len(v.Tokens))
	for r, m := range v.Merges {
		sp := indexSpace(m)
		if id, ok := ids[m[:sp]+m[sp+1:]]; ok && !done[id] {
			scores[id], done[id] = -float64(r), true
		}
	}
	return scores
}

// indexSpace is the separator of an "a b" merge (a may itself be a space).
func indexSpace(m string) int {
	for i := min(1, len(m)); i < len(m); i++ {
		if m[i] == ' ' {
			return i
		}
	}
	return len(m)
}

// spmMerges makes the merges of a SentencePiece BPE vocabulary that has none, as Hugging Face's
// converters extract them from a SentencePiece model: for every ordinary piece, in order of
// falling score (ties by id), each split into two pieces of the vocabulary, ordered by the
// ids of the left and right piece.
func spmMerges(v *Vocab) []string {
	ids := make(map[string]int, len(v.Tokens))
	for i, s := range v.Tokens {
		if t := v.tokenType(i); t == TypeNormal || t == TypeByte {
			if _, dup := ids[s]; !dup {
				ids[s] = i
			}
		}
	}
	order := make([]int, 0, len(v.Tokens))
	for i := range v.Tokens {
		if v.tokenType(i) == TypeNormal {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return v.score(order[a]) > v.score(order[b]) })
	var merges []string
	type split struct{ l, r int }
	for _, id := range order {
		s := v.Tokens[id]
		var local []split
		for k := 1; k < len(s); k++ {
			if !utf8Boundary(s, k) {
				continue
			}
			l, okl := ids[s[:k]]
			r, okr := ids[s[k:]]
			if okl && okr {
				local = append(local, split{l, r})
			}
		}
		sort.Slice(local, func(a, b int) bool {
			if local[a].l != local[b].l {
				return local[a].l < local[b].l
			}
			return local[a].r < local[b].r
		})
		for _, p := range local {
			merges = append(merges, v.Tokens[p.l]+" "+v.Tokens[p.r])
		}
	}
	return merges
}

// utf8Boundary reports whether byte k of s starts a character.
func utf8Boundary(s string, k int) bool { return k == len(s) || s[k]&0xC0 != 0x80 }
