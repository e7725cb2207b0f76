// This file is the engine's public face: Vocab, Compile, Grammar and Matcher.
// STUB: the signatures are final; the bodies are being written (issue 16).

package grammar

import "errors"

var errNotYet = errors.New("grammar: not implemented yet")

// Vocab is a model's vocabulary as byte strings, built once per tokenizer and shared by every
// Matcher (read-only after NewVocab; safe for concurrent use).
type Vocab struct {
	tokens [][]byte
	eos    []int
}

// NewVocab builds a Vocab. tokens[i] is the bytes token i stands for (tokenizer Piece); a nil
// or empty entry is a token no grammar ever allows (control tokens). eos lists the ids that end
// a sequence: they are allowed exactly where the grammar accepts the bytes so far.
func NewVocab(tokens [][]byte, eos []int) *Vocab { return &Vocab{tokens: tokens, eos: eos} }

// Size is the number of token ids.
func (v *Vocab) Size() int { return len(v.tokens) }

// MaskWords is the length of a mask over v in uint64 words.
func (v *Vocab) MaskWords() int { return (len(v.tokens) + 63) / 64 }

// Limits bound what Compile builds (a grammar too large is an error, never an out-of-memory).
type Limits struct {
	MaxRules      int // rules after expansion of repeats (0 = default)
	MaxLexerBytes int // memory the lexer's automata may take (0 = default)
}

// Grammar is a compiled IR: immutable apart from internal caches; safe for concurrent use by
// many Matchers.
type Grammar struct{}

// Compile checks ir and builds its lexer and parser. Errors say what is wrong (an undefined
// rule, a regular expression that does not parse or is unsupported, a grammar over Limits).
func Compile(ir *IR, lim Limits) (*Grammar, error) {
	if err := ir.Validate(); err != nil {
		return nil, err
	}
	return nil, errNotYet
}

// Matcher follows one sequence through a Grammar. Not safe for concurrent use; distinct
// Matchers of one Grammar may run concurrently.
type Matcher struct{}

// NewMatcher starts a Matcher at the beginning of the grammar's language.
func (g *Grammar) NewMatcher(v *Vocab) *Matcher { return &Matcher{} }

// FillMask sets bit i of mask (mask[i/64] >> (i%64) & 1) for every token i that may come next
// and clears the others. len(mask) must be at least v.MaskWords().
func (m *Matcher) FillMask(mask []uint64) {}

// Accept advances past token tok; an error (and no change) if tok is not allowed.
func (m *Matcher) Accept(tok int) error { return errNotYet }

// AcceptBytes advances past raw bytes (forced text, tests, the structured bench); an error
// (and no change) if they cannot continue the sentence.
func (m *Matcher) AcceptBytes(b []byte) error { return errNotYet }

// Rollback undoes the last n Accept/AcceptBytes calls (speculative decoding).
func (m *Matcher) Rollback(n int) {}

// CanEnd reports whether the bytes so far form a sentence of the grammar (EOS allowed).
func (m *Matcher) CanEnd() bool { return false }

// Done reports whether the sentence is complete and no byte may follow it: the sequence ends
// with finish_reason "stop".
func (m *Matcher) Done() bool { return false }

// ForcedBytes returns the bytes every continuation must start with (nil if there is a choice).
func (m *Matcher) ForcedBytes() []byte { return nil }
