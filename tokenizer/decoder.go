// Streaming detokenizer: turns ids into text one at a time without ever splitting a UTF-8
// sequence; see the package comment for the rule.

package tokenizer

import "unicode/utf8"

// Decoder turns a stream of ids into text. It is not safe for concurrent use.
type Decoder struct {
	t       *Tokenizer
	n       int    // ids seen
	first   int    // first id seen
	pending []byte // bytes held back: an incomplete UTF-8 sequence at the end
}

// NewDecoder starts a new stream.
func (t *Tokenizer) NewDecoder() *Decoder { return &Decoder{t: t} }

// Add appends one id and returns the text that is now final.
func (d *Decoder) Add(id int) string {
	p := d.t.Piece(id)
	if d.n == 0 {
		d.first = id
	} else if d.n == 1 && d.first == d.t.vocab.BOS && d.t.stripsLeadingSpace() && len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	d.n++
	d.pending = append(d.pending, p...)
	k := completePrefix(d.pending)
	out := string(d.pending[:k])
	d.pending = append(d.pending[:0], d.pending[k:]...)
	return out
}

// Flush returns the bytes still held back (an unfinished UTF-8 sequence) and resets the hold.
func (d *Decoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns how many leading bytes of b can be emitted: all of them unless b ends
// in a UTF-8 sequence that is incomplete but could still become valid.
func completePrefix(b []byte) int {
	// an incomplete sequence is at most 3 bytes long: look back for its lead byte
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return len(b) // ASCII: nothing incomplete after it
		}
		if c >= 0xC0 { // lead byte
			need := utf8Len(c)
			if c > 0xF4 || need <= k {
				return len(b) // invalid lead, or the sequence is already complete
			}
			if utf8.FullRune(b[len(b)-k:]) {
				return len(b) // cannot become valid (FullRune is true for invalid prefixes)
			}
			return len(b) - k
		}
	}
	return len(b)
}
