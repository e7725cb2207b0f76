// This file turns rune classes into UTF-8 byte-range sequences for the byte-level NFA (cached:
// schemas repeat the same few classes).

package grammar

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// seqCache remembers the byte sequences of rune classes (schemas repeat the same few).
var seqCache sync.Map // ranges, 4 bytes each -> [][][2]byte

func classSeqs(ranges []rune) [][][2]byte {
	kb := make([]byte, 0, 4*len(ranges))
	for _, r := range ranges {
		kb = append(kb, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
	}
	key := string(kb)
	if v, ok := seqCache.Load(key); ok {
		return v.([][][2]byte)
	}
	var seqs [][][2]byte
	emit := func(seq [][2]byte) { seqs = append(seqs, seq) }
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], min(ranges[i+1], unicode.MaxRune)
		// no surrogates: they are not valid UTF-8
		if lo < 0xD800 {
			utf8Seqs(lo, min(hi, 0xD7FF), emit)
		}
		if hi > 0xDFFF {
			utf8Seqs(max(lo, 0xE000), hi, emit)
		}
	}
	if len(key) < 1<<14 {
		seqCache.Store(key, seqs)
	}
	return seqs
}

// utf8Seqs calls emit with byte-range sequences whose union is the UTF-8 encodings of [lo, hi].
func utf8Seqs(lo, hi rune, emit func([][2]byte)) {
	if lo > hi {
		return
	}
	// split at encoding-length boundaries
	for _, b := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= b && hi > b {
			utf8Seqs(lo, b, emit)
			utf8Seqs(b+1, hi, emit)
			return
		}
	}
	if hi < utf8.RuneSelf {
		emit([][2]byte{{byte(lo), byte(hi)}})
		return
	}
	// split until every continuation byte position spans a full or aligned range
	for i := 1; i < 4; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Seqs(lo, lo|m, emit)
				utf8Seqs((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Seqs(lo, (hi&^m)-1, emit)
				utf8Seqs(hi&^m, hi, emit)
				return
			}
		}
	}
	var a, b [4]byte
	k := utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([][2]byte, k)
	for i := range k {
		seq[i] = [2]byte{a[i], b[i]}
	}
	emit(seq)
}
