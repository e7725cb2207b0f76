// SentencePiece Unigram encoding ("t5"), as Hugging Face tokenizers' Unigram model runs it:
// a Viterbi search over every segmentation of the word into vocabulary pieces, maximizing the
// sum of the piece scores. A character that no single-character piece covers may be taken as
// the unknown token at the lowest score minus 10. Candidates are tried from the left, shorter
// pieces first, and only a strictly better score replaces a path, which settles ties. Runs of
// unknown characters are fused into one unknown piece, which byte fallback then spells as
// <0xXX> tokens when the vocabulary has all of its bytes (else it becomes UNK). Unlike Hugging
// Face, whose search also matches control and byte pieces, only ordinary and user-defined
// pieces are candidates, as in SentencePiece, so that text read with parseSpecial=false never
// yields a control id. (Hugging Face splits its special tokens out first, so only a literal
// "<0x41>" in the text is tokenized differently.)

package tokenizer

import (
	"unicode/utf8"
)

// unkPenalty is what an unknown character costs below the lowest piece score (Hugging Face's
// K_UNK_PENALTY, SentencePiece's kUnkPenalty).
const unkPenalty = 10.0

func (t *Tokenizer) initUnigram() {
	v := t.vocab
	lowest := 0.0
	for i, s := range v.Tokens {
		t.maxTokenLen = max(t.maxTokenLen, len(s))
		if sc := float64(v.score(i)); i == 0 || sc < lowest {
			lowest = sc
		}
	}
	t.unkScore = lowest - unkPenalty
}

// latticeNode is the best path that ends at one byte offset.
type latticeNode struct {
	score float64
	start int // -1: not reached
	id    int
}

// encodeUnigram appends the ids of word (spaces already "▁").
func (t *Tokenizer) encodeUnigram(word string, out []int) []int {
	if word == "" {
		return out
	}
	n := len(word)
	best := make([]latticeNode, n+1)
	for i := range best {
		best[i].start = -1
	}
	best[0].start = 0
	unk := t.vocab.UNK
	for s := 0; s < n; {
		_, cl := utf8.DecodeRuneInString(word[s:])
		base := best[s].score
		single := false
		for e := s + 1; e <= n && e-s <= t.maxTokenLen; e++ {
			id, ok := t.unigramPiece(word[s:e])
			if !ok {
				continue
			}
			sc := base + float64(t.vocab.score(id))
			if b := &best[e]; b.start < 0 || sc > b.score {
				*b = latticeNode{score: sc, start: s, id: id}
			}
			if e-s == cl {
				single = true
			}
		}
		if !single {
			sc := base + t.unkScore
			if b := &best[s+cl]; b.start < 0 || sc > b.score {
				*b = latticeNode{score: sc, start: s, id: unk}
			}
		}
		s += cl
	}
	// walk back, fusing runs of unknown pieces
	var pieces []latticeNode // start and id; end is the previous piece's start
	ends := []int{}
	for e := n; e > 0; {
		nd := best[e]
		if nd.id == unk && unk >= 0 && len(pieces) > 0 && pieces[len(pieces)-1].id == unk {
			pieces[len(pieces)-1].start = nd.start
		} else {
			pieces = append(pieces, nd)
			ends = append(ends, e)
		}
		e = nd.start
	}
	for i := len(pieces) - 1; i >= 0; i-- {
		p := word[pieces[i].start:ends[i]]
		if id, ok := t.unigramPiece(p); ok {
			out = append(out, id)
			continue
		}
		out, _ = t.unknownPiece(p, out)
	}
	return out
}

// unigramPiece looks up a piece the segmentation may use: ordinary and user-defined pieces, as
// SentencePiece (control, unknown and byte pieces only come from special-token splitting and
// byte fallback, so "<s>" or "<0x41>" in the text stay text).
func (t *Tokenizer) unigramPiece(s string) (int, bool) {
	id, ok := t.ids[s]
	if !ok {
		return 0, false
	}
	switch t.vocab.tokenType(id) {
	case TypeNormal, TypeUserDefined:
		return id, true
	}
	return 0, false
}

// unknownPiece spells p as <0xXX> tokens when every byte has one, else as one UNK (nothing
// when there is no UNK); unk reports the latter.
func (t *Tokenizer) unknownPiece(p string, out []int) (_ []int, unk bool) {
	for i := 0; i < len(p); i++ {
		if t.byteIDs[p[i]] < 0 {
			if t.vocab.UNK >= 0 {
				out = append(out, t.vocab.UNK)
			}
			return out, true
		}
	}
	for i := 0; i < len(p); i++ {
		out = append(out, t.byteIDs[p[i]])
	}
	return out, false
}
