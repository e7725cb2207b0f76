// This file builds a Vocab from a tokenizer, the one way every caller does it.

package grammar

// Tokens is what VocabFrom reads of a tokenizer (*tokenizer.Tokenizer has these methods).
type Tokens interface {
	VocabSize() int
	Piece(id int) []byte // the token's bytes; nil for control tokens
	IsEOG(id int) bool   // an end-of-generation id
}

// VocabFrom is the grammar's view of tok over size token ids (size <= 0: tok.VocabSize(); ids
// past the tokenizer's, as in a model with a padded vocabulary, are never allowed): every
// token's bytes, none for control tokens, and the end-of-generation ids as EOS (allowed only
// where the grammar can end, never as text).
func VocabFrom(tok Tokens, size int) *Vocab {
	n := tok.VocabSize()
	if size <= 0 {
		size = n
	}
	pieces := make([][]byte, size)
	var eos []int
	for id := range min(n, size) {
		if tok.IsEOG(id) {
			eos = append(eos, id)
			continue
		}
		pieces[id] = tok.Piece(id)
	}
	return NewVocab(pieces, eos)
}
