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
