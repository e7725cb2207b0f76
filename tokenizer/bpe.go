// Byte-level BPE encoding (GPT-2 family): each pre-token is spelled with the byte-level runes
// and its characters are merged by merge rank, lowest rank first, ties leftmost.
package tokenizer

// encodeBPE appends the ids of one text fragment (no special tokens in it).
func (t *Tokenizer) encodeBPE(text string, out []int) []int {
	for _, w := range preSplit(t.stages, text) {
		word := byteEncode(w)
		if t.vocab.IgnoreMerges {
			if id, ok := t.ids[word]; ok {
				out = append(out, id)
				continue
			}
		}
		for _, s := range mergeWord(word, t.mergePrio) {
			piece := word[s.start:s.end]
			if id, ok := t.ids[piece]; ok {
				out = append(out, id)
				continue
			}
			// not a token: fall back to single characters (UNK when even those are missing)
			for _, r := range piece {
				if id, ok := t.ids[string(r)]; ok {
					out = append(out, id)
				} else if t.vocab.UNK >= 0 {
					out = append(out, t.vocab.UNK)
				}
			}
		}
	}
	return out
}

// mergePrio is the merge rank of a+b, if that merge exists.
func (t *Tokenizer) mergePrio(a, b string) (float64, bool) {
	r, ok := t.ranks[a+" "+b]
	return float64(r), ok
}
