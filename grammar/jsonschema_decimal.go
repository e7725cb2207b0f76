// This file builds exact regular expressions for decimals in a range (minimum/maximum on
// "number"): sign, then integer part, then fraction digits compared digit by digit.

package grammar

import (
	"math/big"
	"strings"
)

// decimalRange is a regex for the numbers (without exponent) in [lo, hi]; "" if none.
func decimalRange(lo, hi bound) string {
	var alts []string
	zero := dec{ip: "0"}
	if hi.v == nil || hi.v.Sign() > 0 || hi.v.Sign() == 0 && !hi.excl {
		a, aExcl := zero, false
		if lo.v != nil && lo.v.Sign() >= 0 {
			a, aExcl = toDec(lo.v), lo.excl
		}
		var b *dec
		if hi.v != nil {
			d := toDec(hi.v)
			b = &d
		}
		if s := magRange(a, aExcl, b, hi.excl); s != "" {
			alts = append(alts, s)
		}
	}
	if lo.v == nil || lo.v.Sign() < 0 {
		a, aExcl := zero, false
		if hi.v != nil && hi.v.Sign() <= 0 {
			a, aExcl = toDec(hi.v), hi.excl
		}
		var b *dec
		if lo.v != nil {
			d := toDec(lo.v)
			b = &d
		}
		if s := magRange(a, aExcl, b, lo.excl); s != "" {
			alts = append(alts, "-(?:"+s+")")
		}
	}
	return strings.Join(alts, "|")
}

// dec is |r| as integer digits and fraction digits (no trailing zeros).
type dec struct{ ip, fp string }

func toDec(r *big.Rat) dec {
	a := new(big.Rat).Abs(r)
	q, m := new(big.Int).QuoRem(a.Num(), a.Denom(), new(big.Int))
	var fp []byte
	for m.Sign() != 0 {
		if len(fp) > 400 {
			fail("numeric bound %s has too many digits", r.FloatString(10))
		}
		m.Mul(m, big.NewInt(10))
		d, r2 := new(big.Int).QuoRem(m, a.Denom(), new(big.Int))
		fp = append(fp, byte('0'+d.Int64()))
		m = r2
	}
	return dec{ip: q.String(), fp: string(fp)}
}

// magRange: magnitudes in [a, b] (b nil = unbounded), exclusive ends as flagged.
func magRange(a dec, aExcl bool, b *dec, bExcl bool) string {
	ai, _ := new(big.Int).SetString(a.ip, 10)
	if b == nil {
		next := new(big.Int).Add(ai, big.NewInt(1))
		alts := []string{
			numPart(a.ip, a.fp, true, aExcl, "", false, false),
			"(?:" + natRange(next.String(), nil) + `)(?:\.[0-9]+)?`,
		}
		return joinAlts(alts)
	}
	bi, _ := new(big.Int).SetString(b.ip, 10)
	switch ai.Cmp(bi) {
	case 1:
		return ""
	case 0:
		return numPart(a.ip, a.fp, true, aExcl, b.fp, true, bExcl)
	}
	alts := []string{numPart(a.ip, a.fp, true, aExcl, "", false, false)}
	l, h := new(big.Int).Add(ai, big.NewInt(1)), new(big.Int).Sub(bi, big.NewInt(1))
	if l.Cmp(h) <= 0 {
		alts = append(alts, "(?:"+natRange(l.String(), h)+`)(?:\.[0-9]+)?`)
	}
	alts = append(alts, numPart(b.ip, "", false, false, b.fp, true, bExcl))
	return joinAlts(alts)
}

func joinAlts(alts []string) string {
	var keep []string
	for _, a := range alts {
		if a != "" {
			keep = append(keep, a)
		}
	}
	return strings.Join(keep, "|")
}

// numPart: integer part ip, fraction in the given range; "" if none.
func numPart(ip, lo string, hasLo, loExcl bool, hi string, hasHi, hiExcl bool) string {
	frac, emptyOK := fracRange(lo, hasLo, loExcl, hi, hasHi, hiExcl)
	switch {
	case frac == "" && !emptyOK:
		return ""
	case frac == "":
		return ip
	case emptyOK:
		return ip + `(?:\.(?:` + frac + `))?`
	}
	return ip + `\.(?:` + frac + `)`
}

// fracRange is a regex for the non-empty digit strings t with 0.t in the range, and whether
// the empty fraction (value 0) is in it. lo and hi have no trailing zeros.
func fracRange(lo string, hasLo, loExcl bool, hi string, hasHi, hiExcl bool) (string, bool) {
	lo, hi = strings.TrimRight(lo, "0"), strings.TrimRight(hi, "0")
	if hasLo && lo == "" && !loExcl {
		hasLo = false
	}
	switch {
	case hasHi && hi == "":
		if hiExcl || hasLo {
			return "", false
		}
		return "0+", true
	case hasLo && lo == "" && !hasHi:
		return "0*[1-9][0-9]*", false
	case !hasLo && !hasHi:
		return "[0-9]+", true
	}
	emptyOK := !hasLo
	var free []byte
	var alts []string
	for d := byte('0'); d <= '9'; d++ {
		// Constraints on the rest after digit d: state 0 none, 1 constrained, 2 impossible.
		loState, nlo := 0, ""
		if hasLo {
			if lo == "" { // t > 0
				if d == '0' {
					loState = 1
				}
			} else if d < lo[0] {
				loState = 2
			} else if d == lo[0] {
				loState, nlo = 1, lo[1:]
			}
		}
		hiState, nhi := 0, ""
		if hasHi {
			if d > hi[0] {
				hiState = 2
			} else if d == hi[0] {
				hiState, nhi = 1, hi[1:]
			}
		}
		if loState == 2 || hiState == 2 {
			continue
		}
		if loState == 0 && hiState == 0 {
			free = append(free, d)
			continue
		}
		sub, subEmpty := fracRange(nlo, loState == 1, loExcl, nhi, hiState == 1, hiExcl)
		switch {
		case sub == "" && subEmpty:
			alts = append(alts, string(d))
		case sub != "" && subEmpty:
			alts = append(alts, string(d)+"(?:"+sub+")?")
		case sub != "":
			alts = append(alts, string(d)+"(?:"+sub+")")
		}
	}
	if len(free) > 0 {
		alts = append([]string{digitClass(free) + "[0-9]*"}, alts...)
	}
	return strings.Join(alts, "|"), emptyOK
}

func digitClass(ds []byte) string {
	if len(ds) == 1 {
		return string(ds)
	}
	if int(ds[len(ds)-1]-ds[0]) == len(ds)-1 {
		return digits(ds[0], ds[len(ds)-1])
	}
	return "[" + string(ds) + "]"
}
