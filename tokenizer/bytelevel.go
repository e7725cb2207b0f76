// GPT-2's byte <-> printable-rune table (bytes_to_unicode): the 188 printable Latin-1 bytes
// map to themselves, the other 68 bytes to U+0100.. in byte order, so every byte string has a
// whitespace-free, printable spelling that BPE vocabularies store.

package tokenizer

import "strings"

var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		printable := b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(0x100 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteEncode spells the bytes of s with the byte-level runes.
func byteEncode(s string) string {
	var sb strings.Builder
	sb.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		sb.WriteRune(byteToRune[s[i]])
	}
	return sb.String()
}

// byteDecode maps a byte-level spelling back to bytes; ok is false if a rune is not in the
// table (such runes are kept as their UTF-8).
func byteDecode(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	ok := true
	for _, r := range s {
		if b, found := runeToByte[r]; found {
			out = append(out, b)
		} else {
			out = append(out, string(r)...)
			ok = false
		}
	}
	return out, ok
}

// ByteLevelRune is the printable rune GPT-2's table spells byte b with.
func ByteLevelRune(b byte) rune { return byteToRune[b] }

// ByteLevelSpelling spells the bytes of s with the byte-level runes (how byte-level BPE
// vocabularies and merges store text).
func ByteLevelSpelling(s string) string { return byteEncode(s) }
