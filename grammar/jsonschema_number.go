// This file builds exact regular expressions for bounded integers and decimals: a number in
// [lo, hi] is split by sign, then by the length and digits of its integer part, then by the
// digits of its fraction. Bounded numbers are written without exponents (a subset).

package grammar

import (
	"math/big"
	"strings"
)

const numberRe = `-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?`
const integerRe = `-?(?:0|[1-9][0-9]*)`

func (c *schemaCompiler) numberExpr(m *msch) *Expr {
	lo, hi := m.lo, m.hi
	if lo.v != nil && hi.v != nil {
		cmp := lo.v.Cmp(hi.v)
		if cmp > 0 || cmp == 0 && (lo.excl || hi.excl) {
			return c.empty("minimum/maximum at %s: no number is in range", m.at)
		}
	}
	if m.types&tInt == 0 {
		// Numbers that are not integers: a non-zero fraction digit, no exponent (a subset).
		if lo.v != nil || hi.v != nil || len(m.mult) > 0 {
			unsupported("not", m.at+" (non-integer numbers with bounds)")
		}
		return Re(`-?(?:0|[1-9][0-9]*)\.[0-9]*[1-9][0-9]*`)
	}
	intOnly := m.types&tNum == 0
	var step *big.Rat // multipleOf, when there is exactly one
	for _, k := range m.mult {
		switch {
		case step == nil || step.Cmp(k) == 0:
			step = k
		case step.IsInt() && k.IsInt():
			// multiples of both integers: multiples of their least common multiple
			g := new(big.Int).GCD(nil, nil, step.Num(), k.Num())
			l := new(big.Int).Mul(step.Num(), k.Num())
			step = new(big.Rat).SetInt(l.Quo(l, g))
		default:
			unsupported("multipleOf", m.at+" (several values)")
		}
	}
	if step != nil && step.IsInt() && step.Num().Cmp(big.NewInt(1)) == 0 {
		intOnly, step = true, nil
	}
	if intOnly || step != nil && step.IsInt() {
		return c.integerExpr(m, step)
	}
	if step != nil {
		// multipleOf 10^-d: at most d fraction digits (trailing zeros allowed), no exponent.
		d := decimalPlaces(step)
		if d < 0 || lo.v != nil || hi.v != nil {
			unsupported("multipleOf", m.at)
		}
		return Re(integerRe + `(?:\.[0-9]{1,` + itoa(d) + `}0*)?`)
	}
	if lo.v == nil && hi.v == nil {
		return Re(numberRe)
	}
	re := decimalRange(lo, hi)
	if re == "" {
		return c.empty("minimum/maximum at %s: no number is in range", m.at)
	}
	return Re(re)
}

// decimalPlaces is d when r == 10^-d, else -1.
func decimalPlaces(r *big.Rat) int {
	if r.Num().Cmp(big.NewInt(1)) != 0 {
		return -1
	}
	s := r.Denom().String()
	if strings.Trim(s[1:], "0") != "" || s[0] != '1' || len(s) > 30 {
		return -1
	}
	return len(s) - 1
}

func (c *schemaCompiler) integerExpr(m *msch, step *big.Rat) *Expr {
	var lo, hi *big.Int
	if m.lo.v != nil {
		lo = ceilRat(m.lo.v)
		if m.lo.excl && m.lo.v.IsInt() {
			lo.Add(lo, big.NewInt(1))
		}
	}
	if m.hi.v != nil {
		hi = floorRat(m.hi.v)
		if m.hi.excl && m.hi.v.IsInt() {
			hi.Sub(hi, big.NewInt(1))
		}
	}
	if lo != nil && hi != nil && lo.Cmp(hi) > 0 {
		return c.empty("minimum/maximum at %s: no integer is in range", m.at)
	}
	if step != nil {
		k := step.Num()
		if lo != nil && hi != nil && new(big.Int).Quo(new(big.Int).Sub(hi, lo), k).Cmp(big.NewInt(2000)) <= 0 {
			// Few multiples in range: list them.
			var alts []*Expr
			x := new(big.Int).Mul(ceilRat(new(big.Rat).SetFrac(lo, k)), k)
			for ; x.Cmp(hi) <= 0; x.Add(x, k) {
				alts = append(alts, Lit(x.String()))
			}
			if len(alts) == 0 {
				return c.empty("multipleOf at %s: no multiple in range", m.at)
			}
			return Alt(alts...)
		}
		if lo != nil || hi != nil {
			unsupported("multipleOf", m.at+" (with a wide range)")
		}
		return c.multipleExpr(k, m.at)
	}
	return Re(intRange(lo, hi))
}

// multipleExpr is the integers divisible by k: a regex for powers of ten times 1, 2, 5,
// else a right-linear grammar over the remainder.
func (c *schemaCompiler) multipleExpr(k *big.Int, at string) *Expr {
	s := k.String()
	zeros := len(s) - len(strings.TrimRight(s, "0"))
	lead := strings.TrimRight(s, "0")
	switch lead {
	case "1":
		return Re(`-?(?:0|[1-9][0-9]*` + strings.Repeat("0", zeros) + `)`)
	case "2":
		return Re(`-?(?:0|[0-9]*[02468]` + strings.Repeat("0", zeros) + `)`)
	case "5":
		return Re(`-?(?:0|[0-9]*[05]` + strings.Repeat("0", zeros) + `)`)
	}
	if !k.IsInt64() || k.Int64() > 100 {
		unsupported("multipleOf", at)
	}
	n := int(k.Int64())
	base := len(c.rules)
	if base+n+1 > c.opt.MaxRules {
		fail("schema too large: more than %d rules", c.opt.MaxRules)
	}
	name := func(r int) string { return "m" + itoa(base) + "_" + itoa(r) }
	// rem_r: digits still to read, value so far ≡ r (mod n); may stop when r == 0.
	for r := 0; r < n; r++ {
		var alts []*Expr
		if r == 0 {
			alts = append(alts, Seq())
		}
		for d := 0; d < 10; d++ {
			alts = append(alts, Seq(Lit(itoa(d)), Ref(name((10*r+d)%n))))
		}
		c.rules[name(r)] = Alt(alts...)
	}
	var first []*Expr
	for d := 1; d < 10; d++ {
		first = append(first, Seq(Lit(itoa(d)), Ref(name(d%n))))
	}
	return Seq(Opt(Lit("-")), Alt(Lit("0"), Alt(first...)))
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

func ceilRat(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

func floorRat(r *big.Rat) *big.Int {
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // Euclidean: floor for d > 0
	return q
}

// intRange is a regex for the integers in [lo, hi] (nil = unbounded), without "-0".
func intRange(lo, hi *big.Int) string {
	var alts []string
	zero, one := big.NewInt(0), big.NewInt(1)
	if hi == nil || hi.Sign() >= 0 {
		l := zero
		if lo != nil && lo.Sign() > 0 {
			l = lo
		}
		if s := natRange(l.String(), hi); s != "" {
			alts = append(alts, s)
		}
	}
	if lo == nil || lo.Sign() < 0 {
		l := one
		if hi != nil && hi.Sign() < 0 {
			l = new(big.Int).Neg(hi)
		}
		var h *big.Int
		if lo != nil {
			h = new(big.Int).Neg(lo)
		}
		if s := natRange(l.String(), h); s != "" {
			alts = append(alts, "-(?:"+s+")")
		}
	}
	return strings.Join(alts, "|")
}

// natRange is a regex for the naturals in [lo, hi] (hi nil = unbounded); lo is decimal.
func natRange(lo string, hi *big.Int) string {
	if hi != nil {
		l, _ := new(big.Int).SetString(lo, 10)
		if l.Cmp(hi) > 0 {
			return ""
		}
	}
	var alts []string
	maxLen := 0
	if hi != nil {
		maxLen = len(hi.String())
	} else {
		maxLen = len(lo)
	}
	for n := len(lo); n <= maxLen; n++ {
		a := strings.Repeat("0", n)
		if n > 1 {
			a = "1" + a[1:]
		}
		if n == len(lo) {
			a = lo
		}
		b := strings.Repeat("9", n)
		if hi != nil && n == maxLen {
			b = hi.String()
		}
		alts = append(alts, between(a, b))
	}
	if hi == nil {
		alts = append(alts, `[1-9][0-9]{`+itoa(len(lo))+`,}`)
	}
	return strings.Join(alts, "|")
}

// between is a regex for the digit strings of len(a) from a to b (a <= b, same length).
func between(a, b string) string {
	if a == "" {
		return ""
	}
	n := len(a)
	if a[0] == b[0] {
		return a[:1] + group(between(a[1:], b[1:]))
	}
	if strings.Trim(a[1:], "0") == "" && strings.Trim(b[1:], "9") == "" {
		return digits(a[0], b[0]) + anyDigits(n-1)
	}
	alts := []string{a[:1] + group(between(a[1:], strings.Repeat("9", n-1)))}
	if a[0]+1 <= b[0]-1 {
		alts = append(alts, digits(a[0]+1, b[0]-1)+anyDigits(n-1))
	}
	alts = append(alts, b[:1]+group(between(strings.Repeat("0", n-1), b[1:])))
	return "(?:" + strings.Join(alts, "|") + ")"
}

func group(s string) string {
	if len(s) <= 1 || strings.HasPrefix(s, "(?:") && strings.Count(s, "(") == 1 {
		return s
	}
	return "(?:" + s + ")"
}

func digits(a, b byte) string {
	switch {
	case a == b:
		return string(a)
	case a == '0' && b == '9':
		return "[0-9]"
	}
	return "[" + string(a) + "-" + string(b) + "]"
}

func anyDigits(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "[0-9]"
	}
	return "[0-9]{" + itoa(n) + "}"
}
