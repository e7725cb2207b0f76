// This file merges a conjunction of schema objects into one set of constraints (msch):
// types intersect, bounds tighten, enums intersect, object and array keywords are kept per
// conjunct for the emitters. Keywords that cannot be honoured exactly are refused here.

package grammar

import "math/big"

const (
	tNull = 1 << iota
	tBool
	tInt // integers only
	tNum // numbers that are not integers (number = tInt|tNum)
	tStr
	tArr
	tObj
	tAll = tNull | tBool | tInt | tNum | tStr | tArr | tObj
)

var typeBits = map[string]int{"null": tNull, "boolean": tBool, "integer": tInt,
	"number": tInt | tNum, "string": tStr, "array": tArr, "object": tObj}

// bound is a numeric bound (nil value = none).
type bound struct {
	v    *big.Rat
	excl bool
}

// msch is a merged schema.
type msch struct {
	at         string
	types      int
	enum       []*jv // nil = no enum; values must satisfy the rest too
	hasEnum    bool
	minLen     int
	maxLen     int // -1 = none
	patterns   []string
	formats    []string
	lo, hi     bound
	mult       []*big.Rat
	objs       []*jv // conjuncts with object keywords
	arrs       []*jv // conjuncts with array keywords
	minProps   int
	maxProps   int
	minItems   int
	maxItems   int
	unique     bool
	nots       []*jv
	forbidden  []string // properties objects must not have (from not/required)
	notStrings []string // strings excluded by not/enum
	contains   []*jv    // arrays must have an item matching each
	notBools   []string // "true"/"false" excluded by not/enum
}

// handled keywords with their kinds; anything else is an annotation or unknown (ignored).
var refusedKeywords = []string{"minContains", "maxContains",
	"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"}

func (c *schemaCompiler) merge(k conj) *msch {
	m := &msch{types: tAll, maxLen: -1, maxProps: -1, maxItems: -1}
	if len(k.nodes) > 0 {
		m.at = c.path[k.nodes[0]]
	}
	for _, n := range k.nodes {
		c.mergeOne(m, n)
	}
	var nots []*jv
	for _, x := range m.nots {
		if !containsNode(k.used, x) { // distributed already
			nots = append(nots, x)
		}
	}
	m.nots = nots
	return m
}

func (c *schemaCompiler) mergeOne(m *msch, n *jv) {
	at := c.path[n]
	for _, kw := range refusedKeywords {
		if n.get(kw) != nil {
			unsupported(kw, at)
		}
	}
	if t := n.get("type"); t != nil {
		bits := 0
		add := func(v *jv) {
			b, ok := typeBits[v.s]
			if v.kind != jStr || !ok {
				fail("keyword \"type\" at %s: unknown type %s", at, v)
			}
			bits |= b
		}
		if t.kind == jArr {
			for _, v := range t.arr {
				add(v)
			}
		} else {
			add(t)
		}
		m.types &= bits
	}
	for _, kw := range []string{"enum", "const"} {
		e := n.get(kw)
		if e == nil {
			continue
		}
		vals := []*jv{e}
		if kw == "enum" {
			if e.kind != jArr {
				fail("keyword \"enum\" at %s must be an array", at)
			}
			vals = e.arr
		}
		if !m.hasEnum {
			m.hasEnum, m.enum = true, vals
			continue
		}
		var keep []*jv
		for _, v := range m.enum {
			for _, w := range vals {
				if equalJV(v, w) {
					keep = append(keep, v)
					break
				}
			}
		}
		m.enum = keep
	}
	m.minLen = max(m.minLen, nonNeg(n, "minLength", 0))
	m.maxLen = minOpt(m.maxLen, nonNeg(n, "maxLength", -1))
	m.minItems = max(m.minItems, nonNeg(n, "minItems", 0))
	m.maxItems = minOpt(m.maxItems, nonNeg(n, "maxItems", -1))
	m.minProps = max(m.minProps, nonNeg(n, "minProperties", 0))
	m.maxProps = minOpt(m.maxProps, nonNeg(n, "maxProperties", -1))
	if p := n.get("pattern"); p != nil {
		if p.kind != jStr {
			fail("keyword \"pattern\" at %s must be a string", at)
		}
		if !containsStr(m.patterns, p.s) {
			m.patterns = append(m.patterns, p.s)
		}
	}
	if f := n.get("format"); f != nil && f.kind == jStr {
		if _, ok := formats[f.s]; ok && !containsStr(m.formats, f.s) {
			m.formats = append(m.formats, f.s)
		}
	}
	c.mergeNumbers(m, n, at)
	if u := n.get("uniqueItems"); u != nil && u.kind == jBool && u.b {
		m.unique = true
	}
	for _, kw := range []string{"properties", "required", "additionalProperties", "patternProperties", "propertyNames", "dependencies", "dependentRequired"} {
		if n.get(kw) != nil {
			m.objs = append(m.objs, n)
			break
		}
	}
	if x := n.get("contains"); x != nil {
		m.contains = append(m.contains, x)
	}
	for _, kw := range []string{"items", "prefixItems", "additionalItems"} {
		if n.get(kw) != nil {
			m.arrs = append(m.arrs, n)
			break
		}
	}
	if x := n.get("not"); x != nil {
		m.nots = append(m.nots, x)
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func minOpt(a, b int) int {
	if a < 0 {
		return b
	}
	if b < 0 {
		return a
	}
	return min(a, b)
}

// nonNeg reads a non-negative integer keyword (def if absent).
func nonNeg(n *jv, kw string, def int) int {
	v := n.get(kw)
	if v == nil {
		return def
	}
	r := v.rat()
	if v.kind != jNum || r == nil || !r.IsInt() || r.Sign() < 0 {
		fail("keyword %q must be a non-negative integer (got %s)", kw, v)
	}
	if !r.Num().IsInt64() || r.Num().Int64() > 1<<30 {
		return 1 << 30
	}
	return int(r.Num().Int64())
}

func (c *schemaCompiler) mergeNumbers(m *msch, n *jv, at string) {
	num := func(kw string) *big.Rat {
		v := n.get(kw)
		if v == nil || v.kind == jBool {
			return nil
		}
		r := v.rat()
		if v.kind != jNum || r == nil {
			fail("keyword %q at %s must be a number", kw, at)
		}
		return r
	}
	isTrue := func(kw string) bool {
		v := n.get(kw)
		return v != nil && v.kind == jBool && v.b
	}
	tighten := func(b *bound, v *big.Rat, excl bool, lower bool) {
		if v == nil {
			return
		}
		if b.v == nil {
			*b = bound{v, excl}
			return
		}
		cmp := v.Cmp(b.v)
		if !lower {
			cmp = -cmp
		}
		if cmp > 0 || cmp == 0 && excl {
			*b = bound{v, excl}
		}
	}
	tighten(&m.lo, num("minimum"), isTrue("exclusiveMinimum"), true)
	tighten(&m.hi, num("maximum"), isTrue("exclusiveMaximum"), false)
	tighten(&m.lo, num("exclusiveMinimum"), true, true)
	tighten(&m.hi, num("exclusiveMaximum"), true, false)
	if r := num("multipleOf"); r != nil {
		if r.Sign() <= 0 {
			fail("keyword \"multipleOf\" at %s must be positive", at)
		}
		m.mult = append(m.mult, r)
	}
}

// emit compiles a merged schema.
func (c *schemaCompiler) emit(m *msch) *Expr {
	c.nodes++
	if c.nodes > 200000 {
		fail("schema too large")
	}
	c.applyNots(m)
	if m.hasEnum {
		return c.emitEnum(m)
	}
	var alts []*Expr
	if m.types&tNull != 0 {
		alts = append(alts, Lit("null"))
	}
	if m.types&tBool != 0 {
		for _, b := range []string{"true", "false"} {
			if !containsStr(m.notBools, b) {
				alts = append(alts, Lit(b))
			}
		}
	}
	if m.types&(tInt|tNum) != 0 {
		if e := c.numberExpr(m); e != nil && !isNothing(e) {
			alts = append(alts, e)
		}
	}
	if m.types&tStr != 0 {
		if e := c.stringExpr(m); e != nil && !isNothing(e) {
			alts = append(alts, e)
		}
	}
	if m.types&tArr != 0 {
		if e := c.arrayExpr(m); e != nil && !isNothing(e) {
			alts = append(alts, e)
		}
	}
	if m.types&tObj != 0 {
		if e := c.objectExpr(m); e != nil && !isNothing(e) {
			alts = append(alts, e)
		}
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return Alt(alts...)
}
