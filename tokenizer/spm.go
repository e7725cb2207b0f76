// SentencePiece BPE encoding as llama.cpp's SPM tokenizer does it: spaces become "▁", the
// characters are merged pairwise, always the pair whose merged piece has the highest score
// (ties: leftmost), and symbols that are not pieces fall back to <0xXX> byte tokens.
package tokenizer

import "strings"

const spmSpace = "\u2581"

// encodeSPM appends the ids of one text fragment (no special tokens in it).
func (t *Tokenizer) encodeSPM(text string, prefixSpace bool, out []int) []int {
	if prefixSpace {
		text = " " + text
	}
	text = strings.ReplaceAll(text, " ", spmSpace)
	prio := func(a, b string) (float64, bool) {
		id, ok := t.ids[a+b]
		if !ok {
			return 0, false
		}
		return -float64(t.vocab.score(id)), true
	}
	for _, s := range mergeWord(text, prio) {
		piece := text[s.start:s.end]
		if id, ok := t.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		for i := 0; i < len(piece); i++ {
			out = append(out, t.byteToken(piece[i]))
		}
	}
	return out
}

// byteToken returns the <0xXX> token for b, else the token spelled as that single byte, else UNK.
func (t *Tokenizer) byteToken(b byte) int {
	if id := t.byteIDs[b]; id >= 0 {
		return id
	}
	if id, ok := t.ids[string([]byte{b})]; ok {
		return id
	}
	return t.vocab.UNK
}
