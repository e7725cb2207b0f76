// This file implements ForcingMatcher, jump forward on top of a Matcher: when the grammar
// leaves only one way forward (the bytes `me":` after `{"na` in a schema with one property),
// Forced turns the forced bytes into tokens with the model's own tokenizer and accepts them,
// so the serving engine can append them without sampling each one (engine.Forcer). The last
// token of the span is kept back unless the grammar is Done right after the span: the bytes
// the model writes next might merge with its tail into a different token, so the model
// chooses it (the canonical tokenization of forced text followed by free text need not start
// with the canonical tokenization of the forced text alone).

package grammar

import "bytes"

// ForcingMatcher is a Matcher that also reports the tokens its grammar forces.
type ForcingMatcher struct {
	*Matcher
	encode func(text string) []int
}

// NewForcing wraps m. encode is the model's canonical tokenization of plain text (no BOS, no
// special tokens, no added prefix space), e.g. Tokenizer.Encode(text, false, false).
func NewForcing(m *Matcher, encode func(text string) []int) *ForcingMatcher {
	return &ForcingMatcher{Matcher: m, encode: encode}
}

// Forced returns the tokens that must come next, already accepted (Rollback counts each as one
// Accept); nil when the grammar leaves a choice or the forced bytes make no safe token. Every
// token returned is checked: its bytes continue the forced bytes exactly and the Matcher
// accepts it; at the first one that fails, forcing stops before it.
func (f *ForcingMatcher) Forced() []int {
	if f.Done() {
		return nil
	}
	forced := f.ForcedBytes()
	if len(forced) == 0 {
		return nil
	}
	toks := f.encode(string(forced))
	rest := forced
	n := 0
	for _, tok := range toks {
		if tok < 0 || tok >= len(f.v.tokens) {
			break
		}
		piece := f.v.tokens[tok]
		if len(piece) == 0 || !bytes.HasPrefix(rest, piece) || f.Accept(tok) != nil {
			break
		}
		rest = rest[len(piece):]
		n++
	}
	if n > 0 && !(len(rest) == 0 && f.Done()) {
		f.Rollback(1) // the model writes the last token itself
		n--
	}
	if n == 0 {
		return nil
	}
	return toks[:n]
}

// PlainEncoder adapts a tokenizer's Encode(text) (no BOS) to what NewForcing needs: text in
// the middle of an output, with no space prefix. Byte-level BPE encodes it as it is; a
// SentencePiece tokenizer that prepends a space to its input instead encodes "\n"+text (a
// newline merges with nothing after it in such vocabularies) and drops the tokens that spell
// the prefix; if they do not end exactly there, it gives nil (nothing is forced).
func PlainEncoder(encode func(text string) []int, piece func(tok int) []byte) func(string) []int {
	spell := func(ids []int) []byte {
		var b []byte
		for _, id := range ids {
			b = append(b, piece(id)...)
		}
		return b
	}
	if string(spell(encode("a"))) == "a" {
		return encode
	}
	pre := spell(encode("\n"))
	return func(text string) []int {
		ids := encode("\n" + text)
		var b []byte
		for i, id := range ids {
			if len(b) == len(pre) {
				if string(b) != string(pre) {
					return nil
				}
				return ids[i:]
			}
			b = append(b, piece(id)...)
			if len(b) > len(pre) {
				return nil
			}
		}
		return nil
	}
}
