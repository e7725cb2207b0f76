// WordPiece ("bert") encoding as llama.cpp's WPM tokenizer does it: NFD, lower case, strip accents, split at
// white space and around punctuation, ASCII symbols and CJK ideographs, drop control
// characters; then each word, prefixed with "▁" (GGUF spells word starts that way instead of
// marking continuations with "##"), is cut greedily into the longest vocabulary pieces. A word
// that cannot be covered becomes UNK.

package tokenizer

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// encodeWPM appends the ids of one text fragment.
func (t *Tokenizer) encodeWPM(text string, out []int) []int {
	for _, w := range wpmWords(text) {
		word := spmSpace + w
		start := len(out)
		ok := true
		for i := 0; i < len(word); {
			matched := false
			for j := min(len(word), i+t.maxTokenLen); j > i; j-- {
				if id, found := t.ids[word[i:j]]; found {
					out = append(out, id)
					i, matched = j, true
					break
				}
			}
			if !matched {
				ok = false
				break
			}
		}
		if !ok {
			out = append(out[:start], t.vocab.UNK)
		}
	}
	return out
}

// wpmWords splits text into lower-cased NFD words as BERT's basic tokenizer does.
func wpmWords(text string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range norm.NFD.String(text) {
		switch {
		case isSpace(r):
			flush()
		case r == 0 || r == 0xFFFD || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Mn):
			// dropped (Mn: accents that NFD split off, as BERT's strip_accents)
		case isPunct(r) || r < 0x7F && unicode.IsSymbol(r) || isCJKIdeograph(r):
			flush()
			words = append(words, string(unicode.ToLower(r)))
		default:
			cur.WriteRune(unicode.ToLower(r))
		}
	}
	flush()
	return words
}

// isCJKIdeograph reports the CJK ideograph blocks BERT splits into single characters.
func isCJKIdeograph(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
