// SentencePiece BPE encoding as llama.cpp's SPM tokenizer does it: spaces become "▁", the
// characters are merged pairwise, always the pair whose merged piece has the highest score
// (ties: leftmost), and symbols that are not pieces fall back to <0xXX> byte tokens.
//
// llama.cpp merges over the whole text at once. When no vocabulary piece has "▁" right after
// another character (true for Llama 2 and tok512, checked in New), no merge can cross the
// boundary before a word's "▁", so words are merged separately, which gives the same ids, and
// their results are cached like byte-level BPE words.

package tokenizer

import (
	"strings"
	"unicode/utf8"
)

const spmSpace = "\u2581"

// spmWordSplittable reports whether no token contains "▁" preceded by another character.
func spmWordSplittable(tokens []string) bool {
	for _, tok := range tokens {
		if i := strings.Index(tok, spmSpace); i >= 0 {
			for j := i; j >= 0; {
				// a "▁" at byte j preceded by a character other than "▁"
				if j > 0 && !strings.HasSuffix(tok[:j], spmSpace) {
					return false
				}
				k := strings.Index(tok[j+len(spmSpace):], spmSpace)
				if k < 0 {
					break
				}
				j += len(spmSpace) + k
			}
		}
	}
	return true
}

// spacePrefix reports whether a "▁" goes before text, a fragment between special tokens;
// prevSpecial: it follows a special token or starts the input, first: it starts the input.
func (t *Tokenizer) spacePrefix(text string, prevSpecial, first bool) bool {
	v := t.vocab
	switch v.Metaspace {
	case "":
		return v.AddSpacePrefix && prevSpecial
	case "never":
		return false
	case "first":
		if !first {
			return false
		}
	}
	return !strings.HasPrefix(text, " ") && !strings.HasPrefix(text, spmSpace)
}

// encodeSPM appends the ids of one text fragment (no special tokens in it).
func (t *Tokenizer) encodeSPM(text string, prefixSpace bool, out []int) []int {
	if prefixSpace {
		text = " " + text
	}
	text = strings.ReplaceAll(text, " ", spmSpace)
	split := t.vocab.MetaspaceSplit
	if !t.spmSplit && !split {
		return t.encodeSPMWord(text, out)
	}
	start := 0
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == '\u2581' && i > start && (split || !strings.HasSuffix(text[start:i], spmSpace)) {
			out = t.cachedSPM(text[start:i], out)
			start = i
		}
		i += n
	}
	return t.cachedSPM(text[start:], out)
}

// encodeSPMWord encodes one word (or a whole fragment when words cannot be split).
func (t *Tokenizer) encodeSPMWord(word string, out []int) []int {
	if t.vocab.Model == "t5" {
		return t.encodeUnigram(word, out)
	}
	return t.mergeSPM(word, out)
}

func (t *Tokenizer) cachedSPM(word string, out []int) []int {
	if ids, ok := t.cache.get(word); ok {
		return append(out, ids...)
	}
	n := len(out)
	out = t.encodeSPMWord(word, out)
	t.cache.put(word, append([]int(nil), out[n:]...))
	return out
}

// mergeSPM runs the score-ordered merge over text, or the rank-ordered one when the
// vocabulary came with merges (Hugging Face's BPE with byte_fallback).
func (t *Tokenizer) mergeSPM(text string, out []int) []int {
	prio := func(w string, s, _, e int) (float64, bool) {
		id, ok := t.ids[w[s:e]]
		if !ok {
			return 0, false
		}
		return -float64(t.vocab.score(id)), true
	}
	if t.ranks != nil {
		prio = t.mergePrio
	}
	fused := false // Hugging Face: the last id is an UNK standing for unknown characters
	for _, s := range mergeWord(text, prio) {
		piece := text[s.start:s.end]
		if id, ok := t.ids[piece]; ok {
			out, fused = append(out, id), false
			continue
		}
		if t.ranks != nil {
			// Hugging Face's BPE: an unknown character is its <0xXX> tokens when all exist,
			// else UNK, and a run of such UNKs is one (fuse_unk)
			n := len(out)
			var unk bool
			out, unk = t.unknownPiece(piece, out)
			if unk && fused {
				out = out[:n]
			}
			fused = unk
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
