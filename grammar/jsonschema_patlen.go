// This file intersects an anchored pattern with length bounds (minLength/maxLength) when the
// pattern's shape allows it: the one variable-length part of a concatenation (per alternative)
// gets its repeat count narrowed. Otherwise the caller refuses.

package grammar

import "regexp/syntax"

// boundPattern returns a Go regexp (for searching decoded strings, like the pattern) that
// matches exactly the strings the pattern matches with length in [lo, hi] (hi < 0: none).
func boundPattern(p string, lo, hi int) (*syntax.Regexp, bool) {
	g, err := ecmaToGo(p)
	if err != nil {
		return nil, false
	}
	re, err := syntax.Parse(g, syntax.Perl)
	if err != nil {
		return nil, false
	}
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	n := len(re.Sub)
	if re.Op != syntax.OpConcat || n < 3 || re.Sub[0].Op != syntax.OpBeginText || re.Sub[n-1].Op != syntax.OpEndText {
		return nil, false
	}
	mid := &syntax.Regexp{Op: syntax.OpConcat, Sub: append([]*syntax.Regexp{}, re.Sub[1:n-1]...)}
	if n == 3 {
		mid = re.Sub[1]
	}
	b, ok := boundLen(mid, lo, hi)
	if !ok {
		return nil, false
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{re.Sub[0], b, re.Sub[n-1]}}, true
}

func within(re *syntax.Regexp, lo, hi int) bool {
	a, b := lengths(re)
	return a >= lo && (hi < 0 || b >= 0 && b <= hi)
}

func boundLen(re *syntax.Regexp, lo, hi int) (*syntax.Regexp, bool) {
	if within(re, lo, hi) {
		return re, true
	}
	a, b := lengths(re)
	if hi >= 0 && a > hi || b >= 0 && b < lo {
		return &syntax.Regexp{Op: syntax.OpNoMatch}, true
	}
	switch re.Op {
	case syntax.OpCapture:
		return boundLen(re.Sub[0], lo, hi)
	case syntax.OpAlternate:
		out := &syntax.Regexp{Op: syntax.OpAlternate}
		for _, s := range re.Sub {
			t, ok := boundLen(s, lo, hi)
			if !ok {
				return nil, false
			}
			out.Sub = append(out.Sub, t)
		}
		return out, true
	case syntax.OpConcat:
		fixed, vi := 0, -1
		for i, s := range re.Sub {
			x, y := lengths(s)
			if x == y {
				fixed += x
				continue
			}
			if vi >= 0 {
				return nil, false
			}
			vi = i
		}
		if vi < 0 {
			return nil, false
		}
		h := hi
		if h >= 0 {
			h -= fixed
		}
		t, ok := boundLen(re.Sub[vi], max(lo-fixed, 0), h)
		if !ok {
			return nil, false
		}
		out := &syntax.Regexp{Op: syntax.OpConcat, Sub: append([]*syntax.Regexp{}, re.Sub...)}
		out.Sub[vi] = t
		return out, true
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		x, y := lengths(re.Sub[0])
		if x != y || x == 0 {
			return nil, false
		}
		cmin, cmax := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			cmin = 1
		case syntax.OpQuest:
			cmax = 1
		case syntax.OpRepeat:
			cmin, cmax = re.Min, re.Max
		}
		cmin = max(cmin, (lo+x-1)/x)
		if hi >= 0 && (cmax < 0 || hi/x < cmax) {
			cmax = hi / x
		}
		if cmax >= 0 && cmin > cmax {
			return &syntax.Regexp{Op: syntax.OpNoMatch}, true
		}
		if cmin > 1000 || cmax > 1000 {
			return nil, false
		}
		return &syntax.Regexp{Op: syntax.OpRepeat, Min: cmin, Max: cmax, Sub: []*syntax.Regexp{re.Sub[0]}, Flags: re.Flags}, true
	}
	return nil, false
}

// capPattern is a regexp for a SUBSET of a pattern's (or format's) strings whose length is
// at most hi: every unbounded repeat is capped at the largest count that keeps the longest
// string within hi (a pattern that is not anchored is first wrapped in "any characters").
// It fails if the result is still too long or Go cannot compile it.
func capPattern(re *syntax.Regexp, anchored bool, lo, hi int) (*syntax.Regexp, bool) {
	if !anchored {
		// Any characters before the match unless it starts with ^, after it unless it ends with $.
		anyc := &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{{Op: syntax.OpAnyChar}}}
		subs := []*syntax.Regexp{re}
		if re.Op == syntax.OpConcat && len(re.Sub) > 0 {
			subs = append([]*syntax.Regexp{}, re.Sub...)
		}
		if subs[0].Op != syntax.OpBeginText {
			subs = append([]*syntax.Regexp{anyc}, subs...)
		}
		if subs[len(subs)-1].Op != syntax.OpEndText {
			subs = append(subs, anyc)
		}
		re = &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
	}
	if a, _ := lengths(re); a < lo {
		if b, ok := boundLen(re, lo, -1); ok {
			re = b
		} else {
			return nil, false
		}
	}
	if _, b := lengths(re); b >= 0 && b <= hi || hi >= 1<<30 {
		return re, true
	}
	// Cap only unbounded repeats if that is enough, else every repeat.
	best, all := -1, false
	for _, all = range []bool{false, true} {
		for l, h := 0, min(hi, 1000); l <= h; {
			mid := (l + h) / 2
			if _, b := lengths(capRepeats(re, mid, all)); b >= 0 && b <= hi {
				best, l = mid, mid+1
			} else {
				h = mid - 1
			}
		}
		if best >= 0 {
			break
		}
	}
	for r := best; r >= 0; r /= 2 {
		out := capRepeats(re, r, all)
		if _, err := syntax.Parse(out.String(), syntax.Perl); err == nil && len(out.String()) < 20000 {
			if _, err := syntax.Parse(encodeRegexp(out).String(), syntax.Perl); err == nil {
				return out, true
			}
		}
		if r == 0 {
			break
		}
	}
	return nil, false
}

func capRepeats(re *syntax.Regexp, r int, all bool) *syntax.Regexp {
	out := *re
	out.Sub = nil
	out.Sub0 = [1]*syntax.Regexp{}
	for _, s := range re.Sub {
		out.Sub = append(out.Sub, capRepeats(s, r, all))
	}
	switch re.Op {
	case syntax.OpStar:
		out.Op, out.Min, out.Max = syntax.OpRepeat, 0, r
	case syntax.OpPlus:
		out.Op, out.Min, out.Max = syntax.OpRepeat, 1, max(r, 1)
	case syntax.OpRepeat:
		if re.Max < 0 || all && re.Max > max(re.Min, r) {
			out.Max = max(re.Min, r)
		}
	case syntax.OpQuest:
		if all && r == 0 {
			out.Op, out.Min, out.Max = syntax.OpRepeat, 0, 0
		}
	}
	return &out
}
