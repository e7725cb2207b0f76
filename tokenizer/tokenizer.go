// Tokenizer: built from a Vocab; splits out special tokens, dispatches to the SentencePiece or
// byte-level BPE encoder, and turns ids back into bytes.

package tokenizer

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer encodes and decodes text for one vocabulary. It is safe for concurrent use.
type Tokenizer struct {
	vocab *Vocab
	ids   map[string]int   // token text -> id (last one wins, as in llama.cpp)
	ranks map[mergeKey]int // merge pair -> rank
	cache wordCache
	// SentencePiece: words may be merged separately (see spm.go)
	spmSplit bool
	stages   []stage
	byteIDs  [256]int // <0xXX> tokens, -1 if absent
	pieces   [][]byte // Piece(id)
	special  []int    // split-out tokens, longest text first
	eog      map[int]bool
	// WordPiece and Unigram: longest token in bytes
	maxTokenLen int
	// Unigram: the score of an unknown character (lowest score - 10, as Hugging Face)
	unkScore float64
}

// eogNames are token texts that end generation besides EOS/EOT.
var eogNames = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
	"<|eom_id|>", "<EOT>", "<|end_of_text|>"}

// New builds a tokenizer for v. v must not be changed afterwards.
func New(v *Vocab) (*Tokenizer, error) {
	if err := v.validate(); err != nil {
		return nil, err
	}
	t := &Tokenizer{vocab: v, ids: make(map[string]int, len(v.Tokens)), eog: map[int]bool{}}
	for i, s := range v.Tokens {
		t.ids[s] = i
	}
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	switch v.Model {
	case "llama", "t5":
		t.spmSplit = spmWordSplittable(v.Tokens)
		for i, s := range v.Tokens {
			if b, ok := parseBytePiece(s); ok && (v.Types == nil || v.Types[i] == TypeByte) {
				t.byteIDs[b] = i
			}
		}
		switch v.Metaspace {
		case "", "first", "always", "never":
		default:
			return nil, fmt.Errorf("tokenizer: unknown Metaspace prepend scheme %q", v.Metaspace)
		}
		if v.Model == "llama" && v.Merges != nil {
			if err := t.setRanks(v.Merges); err != nil {
				return nil, err
			}
		}
		if v.Model == "t5" {
			t.initUnigram()
		}
	case "gpt2":
		stages, err := preTokenizer(v.Pre)
		if err != nil {
			return nil, err
		}
		t.stages = stages
		if err := t.setRanks(v.Merges); err != nil {
			return nil, err
		}
	case "bert":
		for _, s := range v.Tokens {
			t.maxTokenLen = max(t.maxTokenLen, len(s))
		}
	default:
		return nil, fmt.Errorf("tokenizer: unknown tokenizer model %q", v.Model)
	}
	if v.Normalize != "" && v.Normalize != "NFC" {
		return nil, fmt.Errorf("tokenizer: unsupported normalization %q", v.Normalize)
	}
	t.pieces = make([][]byte, len(v.Tokens))
	for i := range v.Tokens {
		t.pieces[i] = t.makePiece(i)
		switch v.tokenType(i) {
		case TypeControl, TypeUnknown, TypeUserDefined:
			t.special = append(t.special, i)
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(v.Tokens[t.special[a]]) > len(v.Tokens[t.special[b]])
	})
	for _, id := range []int{v.EOS, v.EOT} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for _, name := range eogNames {
		if id, ok := t.ids[name]; ok {
			t.eog[id] = true
		}
	}
	return t, nil
}

// setRanks builds the merge-pair ranks ("a b", the first occurrence of a pair counts).
func (t *Tokenizer) setRanks(merges []string) error {
	t.ranks = make(map[mergeKey]int, len(merges))
	for i, m := range merges {
		sp := strings.IndexByte(m[min(1, len(m)):], ' ')
		if sp < 0 {
			return fmt.Errorf("tokenizer: merge %d %q has no space", i, m)
		}
		sp += min(1, len(m))
		k := mergeKey{m[:sp], m[sp+1:]}
		if _, dup := t.ranks[k]; !dup {
			t.ranks[k] = i
		}
	}
	return nil
}

// score returns the score of token id (0 when the vocabulary has none).
func (v *Vocab) score(id int) float32 {
	if v.Scores == nil {
		return 0
	}
	return v.Scores[id]
}

// makePiece computes Piece(id).
func (t *Tokenizer) makePiece(id int) []byte {
	text := t.vocab.Tokens[id]
	switch t.vocab.tokenType(id) {
	case TypeControl, TypeUnknown:
		return nil
	case TypeUserDefined:
		return []byte(text)
	case TypeByte:
		if b, ok := parseBytePiece(text); ok {
			return []byte{b}
		}
		return nil
	case TypeNormal:
		if t.vocab.spm() {
			return []byte(strings.ReplaceAll(text, spmSpace, " "))
		}
		b, _ := byteDecode(text)
		return b
	}
	return nil // unused and unknown types print nothing
}

// Encode turns text into ids. addSpecial adds BOS/EOS as the vocabulary asks (AddBOS/AddEOS);
// parseSpecial lets control tokens such as "<|im_start|>" in the text become their ids.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int {
	v := t.vocab
	var out []int
	if addSpecial && v.AddBOS {
		out = append(out, v.BOS)
	}
	prevSpecial, first := true, true
	for _, f := range t.partition(text, parseSpecial) {
		if f.id >= 0 {
			out = append(out, f.id)
			prevSpecial, first = true, false
			continue
		}
		s := f.text
		if v.Normalize == "NFC" {
			s = norm.NFC.String(s)
		}
		switch v.Model {
		case "llama", "t5":
			out = t.encodeSPM(s, t.spacePrefix(s, prevSpecial, first), out)
		case "bert":
			out = t.encodeWPM(s, out)
		default:
			out = t.encodeBPE(s, out)
		}
		prevSpecial, first = false, false
	}
	if addSpecial && v.AddEOS {
		out = append(out, v.EOS)
	}
	return out
}

// Piece returns the raw bytes of one token as llama.cpp's token_to_piece(special=false) gives
// them (nil for control tokens and ids out of range). The slice must not be modified.
func (t *Tokenizer) Piece(id int) []byte {
	if id < 0 || id >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// stripsLeadingSpace reports whether the piece after a leading BOS loses one leading space.
func (t *Tokenizer) stripsLeadingSpace() bool {
	v := t.vocab
	if !v.spm() || v.BOS < 0 {
		return false
	}
	if v.Metaspace != "" {
		return v.Metaspace != "never"
	}
	return v.AddSpacePrefix
}

// Decode turns ids into text (see the package comment for the leading-space rule). Bytes that
// do not form valid UTF-8 are kept as they are.
func (t *Tokenizer) Decode(ids []int) string {
	var sb strings.Builder
	for i, id := range ids {
		p := t.Piece(id)
		if i == 1 && ids[0] == t.vocab.BOS && t.stripsLeadingSpace() && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		sb.Write(p)
	}
	return sb.String()
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.vocab.Tokens) }

// BOS is the beginning-of-sequence id, -1 if none.
func (t *Tokenizer) BOS() int { return t.vocab.BOS }

// EOS is the end-of-sequence id, -1 if none.
func (t *Tokenizer) EOS() int { return t.vocab.EOS }

// IsEOG reports whether id ends generation: EOS, EOT, or a token named <|im_end|>, <|eot_id|>,
// <|end_of_text|>, <|endoftext|>, <|end|>, <end_of_turn>, <|eom_id|>, <EOT>.
func (t *Tokenizer) IsEOG(id int) bool { return t.eog[id] }

// TokenID looks up the token whose text is exactly text.
func (t *Tokenizer) TokenID(text string) (int, bool) {
	id, ok := t.ids[text]
	return id, ok
}

// Vocab returns the vocabulary the tokenizer was built from; it must not be modified.
func (t *Tokenizer) Vocab() *Vocab { return t.vocab }
