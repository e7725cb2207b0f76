// Splitting special tokens out of the text before pre-tokenization, as llama.cpp's
// tokenizer_st_partition: every special token, longest first, splits every remaining text
// fragment at each of its occurrences; lstrip/rstrip tokens swallow adjacent ASCII white space.

package tokenizer

import "strings"

// fragment is either raw text (id < 0) or one special token.
type fragment struct {
	text string
	id   int
}

func isASCIISpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, id: -1}}
	for _, id := range t.special {
		typ := t.vocab.tokenType(id)
		if !parseSpecial && (typ == TypeControl || typ == TypeUnknown) {
			continue
		}
		tok := t.vocab.Tokens[id]
		if tok == "" {
			continue
		}
		var next []fragment
		for _, f := range frags {
			if f.id >= 0 || !strings.Contains(f.text, tok) {
				next = append(next, f)
				continue
			}
			rest := f.text
			for {
				k := strings.Index(rest, tok)
				if k < 0 {
					if rest != "" {
						next = append(next, fragment{text: rest, id: -1})
					}
					break
				}
				left := rest[:k]
				if t.vocab.LStrip[id] {
					left = strings.TrimRightFunc(left, func(r rune) bool { return r < 0x80 && isASCIISpace(byte(r)) })
				}
				if left != "" {
					next = append(next, fragment{text: left, id: -1})
				}
				next = append(next, fragment{id: id})
				rest = rest[k+len(tok):]
				if t.vocab.RStrip[id] {
					rest = strings.TrimLeftFunc(rest, func(r rune) bool { return r < 0x80 && isASCIISpace(byte(r)) })
				}
			}
		}
		frags = next
	}
	return frags
}
