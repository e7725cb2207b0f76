// This file merges a conjunction of schema objects into one set of constraints (msch):
// types intersect, bounds tighten, enums intersect, object and array keywords are kept per
// conjunct for the emitters. Keywords that cannot be honoured exactly are refused here.

package grammar

import (
	"fmt"
	"math/big"
)

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
	at        string
	types     int
	enum      []*jv // nil = no enum; values must satisfy the rest too
	hasEnum   bool
	minLen    int
	maxLen    int // -1 = none
	patterns  []string
	formats   []string
	lo, hi    bound
	mult      []*big.Rat
	objs      []*jv // conjuncts with object keywords
	arrs      []*jv // conjuncts with array keywords
	minProps  int
	maxProps  int
	minItems  int
	maxItems  int
	unique    bool
	nots      []*jv
	forbidden []string // properties objects must not have (from not/required)
}

// handled keywords with their kinds; anything else is an annotation or unknown (ignored).
var refusedKeywords = []string{"contains", "minContains", "maxContains",
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
		alts = append(alts, Lit("true"), Lit("false"))
	}
	if m.types&(tInt|tNum) != 0 {
		if e := c.numberExpr(m); e != nil {
			alts = append(alts, e)
		}
	}
	if m.types&tStr != 0 {
		if e := c.stringExpr(m); e != nil {
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

// applyNots honours the forms of "not" that remove types, forbid enum values or forbid a
// property; not(not X) was merged as X by flatten, not(anyOf) splits (De Morgan).
func (c *schemaCompiler) applyNots(m *msch) {
	work := append([]*jv{}, m.nots...)
	for len(work) > 0 {
		x := work[0]
		work = work[1:]
		if onlyKey(x, "$ref") {
			x = c.resolve(x, x.get("$ref"))
		}
		var keys []string
		if x.kind == jObj {
			for _, k := range x.keys {
				if !annotation[k] {
					keys = append(keys, k)
				}
			}
		}
		switch {
		case x.kind == jBool:
			if x.b {
				m.types = 0
			}
		case len(keys) == 0:
			m.types = 0
		case onlyKey(x, "not"):
			// merged by flatten
		case len(keys) == 1 && keys[0] == "anyOf" && x.get("anyOf").kind == jArr:
			work = append(work, x.get("anyOf").arr...)
		case len(keys) == 1 && keys[0] == "type":
			sub := &msch{types: tAll}
			c.mergeOne(sub, x)
			m.types &^= sub.types
		case len(keys) == 1 && (keys[0] == "enum" || keys[0] == "const"):
			var vals []*jv
			if keys[0] == "enum" && x.get("enum").kind == jArr {
				vals = x.get("enum").arr
			} else {
				vals = []*jv{x.get(keys[0])}
			}
			if m.hasEnum {
				var keep []*jv
				for _, v := range m.enum {
					bad := false
					for _, w := range vals {
						bad = bad || equalJV(v, w)
					}
					if !bad {
						keep = append(keep, v)
					}
				}
				m.enum = keep
				continue
			}
			for _, v := range vals {
				if kindBits(v)&m.types != 0 {
					unsupported("not", m.at)
				}
			}
		case len(keys) == 1 && keys[0] == "required" && x.get("required").kind == jArr && len(x.get("required").arr) == 1 && x.get("required").arr[0].kind == jStr:
			// Objects without that property (anything else has every required property).
			m.types &= tObj
			m.forbidden = append(m.forbidden, x.get("required").arr[0].s)
		default:
			unsupported("not", m.at)
		}
	}
}

// annotation keywords never change what validates.
var annotation = map[string]bool{"description": true, "title": true, "$comment": true, "examples": true, "default": true, "$schema": true, "$id": true, "id": true}

// emitEnum is the enum values that satisfy every other constraint, as literals.
func (c *schemaCompiler) emitEnum(m *msch) *Expr {
	var alts []*Expr
	seen := map[string]bool{}
	var rest *IR // the schema without its enum, for values valueOK cannot judge
	for _, v := range m.enum {
		if (v.kind == jObj && len(m.objs) > 0 || v.kind == jArr && (len(m.arrs) > 0 || m.unique)) && kindBits(v)&m.types != 0 {
			if m.unique {
				unsupported("uniqueItems", m.at)
			}
			if rest == nil {
				r := *m
				r.hasEnum, r.enum = false, nil
				e := c.emit(&r)
				rest = &IR{Start: "enum rest", Rules: map[string]*Expr{"enum rest": e}}
				for k, e := range c.rules {
					rest.Rules[k] = e // rules still being compiled are empty: values are only dropped
				}
			}
			if !rest.Match([]byte(v.String())) {
				continue
			}
		} else if !c.valueOK(v, m) {
			continue
		}
		for _, s := range spellings(v) {
			if !seen[s] {
				seen[s] = true
				alts = append(alts, Lit(s))
			}
		}
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return Alt(alts...)
}

// spellings is the compact JSON of v, and for an integral number also its plain integer form.
func spellings(v *jv) []string {
	s := v.String()
	if v.kind != jNum {
		return []string{s}
	}
	out := []string{s}
	if r := v.rat(); r != nil && r.IsInt() {
		if t := r.Num().String(); t != s {
			out = append(out, t)
		}
	}
	return out
}

// valueOK checks an enum value against the merged constraints (exactly, or refuses).
func (c *schemaCompiler) valueOK(v *jv, m *msch) bool {
	switch v.kind {
	case jNull:
		return m.types&tNull != 0
	case jBool:
		return m.types&tBool != 0
	case jNum:
		r := v.rat()
		if r == nil {
			return false
		}
		if r.IsInt() && m.types&tInt == 0 || !r.IsInt() && m.types&tNum == 0 {
			return false
		}
		if m.lo.v != nil && (r.Cmp(m.lo.v) < 0 || m.lo.excl && r.Cmp(m.lo.v) == 0) {
			return false
		}
		if m.hi.v != nil && (r.Cmp(m.hi.v) > 0 || m.hi.excl && r.Cmp(m.hi.v) == 0) {
			return false
		}
		for _, k := range m.mult {
			if !new(big.Rat).Quo(r, k).IsInt() {
				return false
			}
		}
		return true
	case jStr:
		if m.types&tStr == 0 {
			return false
		}
		n := len([]rune(v.s))
		if n < m.minLen || m.maxLen >= 0 && n > m.maxLen {
			return false
		}
		for _, p := range m.patterns {
			re, err := ecmaRegexp(p)
			if err != nil {
				unsupported("pattern", m.at+": "+err.Error())
			}
			if !re.MatchString(v.s) {
				return false
			}
		}
		for _, f := range m.formats {
			if !formatRegexp(f).MatchString(v.s) {
				return false
			}
		}
		return true
	case jArr:
		if m.types&tArr == 0 {
			return false
		}
		if len(m.arrs) > 0 || m.unique {
			unsupported("enum", m.at+" (array values with item constraints)")
		}
		return len(v.arr) >= m.minItems && (m.maxItems < 0 || len(v.arr) <= m.maxItems)
	}
	if m.types&tObj == 0 {
		return false
	}
	if len(m.objs) > 0 {
		unsupported("enum", m.at+" (object values with property constraints)")
	}
	return len(v.keys) >= m.minProps && (m.maxProps < 0 || len(v.keys) <= m.maxProps)
}

var _ = fmt.Sprint
