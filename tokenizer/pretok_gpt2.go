// The two hand-written pre-tokenizer splitters with look-ahead: GPT-2's
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// and Llama 3's (digits=3) / Qwen2's (digits=1)
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Each walks the piece once, trying the alternatives in order at the current position, which
// is what a backtracking regex engine does for these patterns.

package tokenizer

// contraction returns the length of 's 't 're 've 'm 'll 'd at i (0 if none); fold enables
// case-insensitive matching.
func contraction(cps []rune, i int, fold bool) int {
	if at(cps, i) != '\'' {
		return 0
	}
	c1, c2 := at(cps, i+1), at(cps, i+2)
	if fold {
		c1, c2 = lower(c1), lower(c2)
	}
	switch {
	case c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd':
		return 2
	case c1 == 'r' && c2 == 'e', c1 == 'v' && c2 == 'e', c1 == 'l' && c2 == 'l':
		return 3
	}
	return 0
}

// spaceRun returns the length of the run of white space starting at i.
func spaceRun(cps []rune, i int) int {
	n := 0
	for isSpace(at(cps, i+n)) {
		n++
	}
	return n
}

// splitGPT2 splits one piece with the GPT-2 pattern and returns the piece lengths.
func splitGPT2(cps []rune) []int {
	var out []int
	for pos := 0; pos < len(cps); {
		n := matchGPT2(cps, pos)
		out = append(out, n)
		pos += n
	}
	return out
}

func matchGPT2(cps []rune, pos int) int {
	if n := contraction(cps, pos, false); n > 0 {
		return n
	}
	c := cps[pos]
	start := pos
	if c == ' ' {
		start = pos + 1
	}
	for _, class := range []func(rune) bool{isLetter, isNumber, isOther} {
		if class(at(cps, start)) {
			e := start + 1
			for class(at(cps, e)) {
				e++
			}
			return e - pos
		}
	}
	if ws := spaceRun(cps, pos); ws > 0 {
		if ws > 1 && pos+ws < len(cps) { // \s+(?!\S): leave the last space to the next token
			return ws - 1
		}
		return ws
	}
	return 1
}

// splitLlama3 splits one piece with the Llama 3 pattern; digits is the \p{N} group size
// (3 for Llama 3, 1 for Qwen2).
func splitLlama3(cps []rune, digits int) []int {
	var out []int
	for pos := 0; pos < len(cps); {
		n := matchLlama3(cps, pos, digits)
		out = append(out, n)
		pos += n
	}
	return out
}

func matchLlama3(cps []rune, pos, digits int) int {
	if n := contraction(cps, pos, true); n > 0 {
		return n
	}
	c := cps[pos]
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c != '\r' && c != '\n' && !isNumber(c) {
		if isLetter(c) || isLetter(at(cps, pos+1)) {
			e := pos + 1
			for isLetter(at(cps, e)) {
				e++
			}
			return e - pos
		}
	}
	// \p{N}{1,digits}
	if isNumber(c) {
		e := pos + 1
		for e-pos < digits && isNumber(at(cps, e)) {
			e++
		}
		return e - pos
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	start := pos
	if c == ' ' {
		start = pos + 1
	}
	if isOther(at(cps, start)) {
		e := start + 1
		for isOther(at(cps, e)) {
			e++
		}
		for r := at(cps, e); r == '\r' || r == '\n'; r = at(cps, e) {
			e++
		}
		return e - pos
	}
	ws := spaceRun(cps, pos)
	// \s*[\r\n]+ : up to the last \r or \n of the white-space run
	lastNL := -1
	for i := pos; i < pos+ws; i++ {
		if cps[i] == '\r' || cps[i] == '\n' {
			lastNL = i
		}
	}
	if lastNL >= 0 {
		return lastNL + 1 - pos
	}
	if ws > 1 && pos+ws < len(cps) { // \s+(?!\S)
		return ws - 1
	}
	if ws > 0 {
		return ws
	}
	return 1
}
