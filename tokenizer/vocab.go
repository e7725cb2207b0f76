// Vocab: the format-neutral vocabulary description shared by all loaders and the GGUF writer.

package tokenizer

import "fmt"

// GGUF token types (tokenizer.ggml.token_type).
const (
	TypeNormal      = 1
	TypeUnknown     = 2
	TypeControl     = 3
	TypeUserDefined = 4
	TypeUnused      = 5
	TypeByte        = 6
)

// Vocab is the format-neutral description that every loader produces and the GGUF writer
// consumes.
type Vocab struct {
	Model  string // "llama" (SentencePiece BPE), "t5" (SentencePiece Unigram), "gpt2" (byte-level BPE), "bert" (WordPiece): GGUF's tokenizer.ggml.model
	Pre    string // pre-tokenizer name as GGUF's tokenizer.ggml.pre: "default", "llama-bpe", "qwen2", "gpt-2", ...
	Tokens []string
	Scores []float32 // may be nil (all zero)
	Types  []int32   // GGUF token types, see Type*; may be nil (all normal)
	Merges []string  // "a b" pairs, BPE only, rank order; for "llama" only when the source had merges (tokenizer.json), which then decide instead of the scores

	BOS, EOS, UNK, PAD, EOT int // -1 if none
	AddBOS, AddEOS          bool
	AddSpacePrefix          bool // SentencePiece: prepend a space (tokenizer.ggml.add_space_prefix)

	// Extensions that have no GGUF key (loaders fill them where the source says so).
	IgnoreMerges bool         // a pre-token that is itself a token is emitted whole (Llama 3, tokenizer.json ignore_merges)
	Normalize    string       // "" or "NFC": normalization applied to text outside special tokens
	LStrip       map[int]bool // special tokens that swallow white space on their left
	RStrip       map[int]bool // special tokens that swallow white space on their right
	// SentencePiece kinds ("llama", "t5") from a tokenizer.json with the Metaspace
	// pre-tokenizer: its prepend_scheme, "first", "always" or "never". Then a "▁" is
	// prepended only to text that does not already start with a space, and with "first" only
	// to the text before any special token. "" keeps llama.cpp's rule (AddSpacePrefix: always,
	// after every special token too, as tokenizer.json's Prepend("▁") normalizer does).
	Metaspace      string
	MetaspaceSplit bool // Metaspace split=true: every "▁" starts a new word
}

// spm reports whether the vocabulary is one of the SentencePiece kinds ("▁" for spaces,
// <0xXX> byte pieces).
func (v *Vocab) spm() bool { return v.Model == "llama" || v.Model == "t5" }

// tokenType returns the GGUF type of token id (normal when Types is absent).
func (v *Vocab) tokenType(id int) int32 {
	if v.Types == nil || id < 0 || id >= len(v.Types) {
		return TypeNormal
	}
	return v.Types[id]
}

// validate checks the internal consistency of v; src names the origin for error messages.
func (v *Vocab) validate() error {
	n := len(v.Tokens)
	if n == 0 {
		return fmt.Errorf("tokenizer: vocabulary has no tokens")
	}
	if v.Scores != nil && len(v.Scores) != n {
		return fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	for name, id := range map[string]int{"BOS": v.BOS, "EOS": v.EOS, "UNK": v.UNK, "PAD": v.PAD, "EOT": v.EOT} {
		if id < -1 || id >= n {
			return fmt.Errorf("tokenizer: %s id %d out of range [0,%d)", name, id, n)
		}
	}
	if v.AddBOS && v.BOS < 0 {
		return fmt.Errorf("tokenizer: AddBOS set but vocabulary has no BOS token")
	}
	if v.AddEOS && v.EOS < 0 {
		return fmt.Errorf("tokenizer: AddEOS set but vocabulary has no EOS token")
	}
	return nil
}
