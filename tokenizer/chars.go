// Character classes used by the pre-tokenizers: \p{L}, \p{N}, \p{P} and \s as Unicode defines
// them (Go's unicode tables), with "outside the piece" as a class of its own.

package tokenizer

import "unicode"

// outside marks a position beyond the current piece; it belongs to no class.
const outside rune = -1

func isLetter(r rune) bool {
	return r >= 0 && (r < 0x80 && (r|0x20 >= 'a' && r|0x20 <= 'z') || r >= 0x80 && unicode.IsLetter(r))
}
func isNumber(r rune) bool {
	return r >= 0 && (r >= '0' && r <= '9' || r >= 0x80 && unicode.IsNumber(r))
}
func isSpace(r rune) bool { return r >= 0 && unicode.IsSpace(r) }
func isPunct(r rune) bool { return r >= 0 && unicode.IsPunct(r) }

// isOther reports [^\s\p{L}\p{N}] for a position inside the piece.
func isOther(r rune) bool { return r >= 0 && !isSpace(r) && !isLetter(r) && !isNumber(r) }

// lower folds ASCII and Unicode simple case for the (?i:'s|'t...) contraction check.
func lower(r rune) rune {
	if r < 0 {
		return r
	}
	return unicode.ToLower(r)
}

// at returns cps[i] or outside.
func at(cps []rune, i int) rune {
	if i < 0 || i >= len(cps) {
		return outside
	}
	return cps[i]
}
