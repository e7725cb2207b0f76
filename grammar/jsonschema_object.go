// This file emits objects and arrays. Object properties come in the order the schema lists
// them (optional ones skippable), then additional properties; a counter threaded through the
// sequence enforces minProperties/maxProperties. Arrays are prefix items then the rest.

package grammar

import "regexp"

// propSpec is one named property after merging the conjuncts.
type propSpec struct {
	name     string
	schemas  []*jv
	required bool
}

func (c *schemaCompiler) objectExpr(m *msch) *Expr {
	var props []*propSpec
	byName := map[string]*propSpec{}
	var required []string
	for _, n := range m.objs {
		if p := n.get("properties"); p != nil {
			if p.kind != jObj {
				fail("keyword \"properties\" at %s must be an object", c.path[n])
			}
			for _, name := range p.keys {
				if byName[name] == nil {
					byName[name] = &propSpec{name: name}
					props = append(props, byName[name])
				}
			}
		}
		if r := n.get("required"); r != nil {
			if r.kind != jArr {
				fail("keyword \"required\" at %s must be an array", c.path[n])
			}
			for _, s := range r.arr {
				if s.kind != jStr {
					fail("keyword \"required\" at %s must list strings", c.path[n])
				}
				required = append(required, s.s)
			}
		}
	}
	for _, name := range m.forbidden {
		if byName[name] == nil {
			byName[name] = &propSpec{name: name}
			props = append(props, byName[name])
		}
	}
	for _, name := range required {
		if byName[name] == nil {
			byName[name] = &propSpec{name: name}
			props = append(props, byName[name])
		}
		byName[name].required = true
	}
	// Each conjunct constrains every property: by name, else by pattern, else additional.
	var extra []*jv // schemas for additional keys (all conjuncts)
	extraOK := true
	var patKeys []string // patterns additional keys must match (none: any key)
	var patSch []*jv     // their schemas
	var pnNodes []*jv    // propertyNames schemas
	for _, n := range m.objs {
		pp := n.get("properties")
		pats := n.get("patternProperties")
		addl := n.get("additionalProperties")
		if addl == nil && pats == nil && c.opt.CloseObjects && pp != nil && pp.kind == jObj && len(pp.keys) > 0 {
			addl = closedObject
		}
		if pn := n.get("propertyNames"); pn != nil && !allTrivial([]*jv{pn}) {
			pnNodes = append(pnNodes, pn)
		}
		var res []*regexp.Regexp
		var patSchemas []*jv
		if pats != nil {
			if pats.kind != jObj {
				fail("keyword \"patternProperties\" at %s must be an object", c.path[n])
			}
			for i, k := range pats.keys {
				re, err := ecmaRegexp(k)
				if err != nil {
					unsupported("patternProperties", c.path[n]+": "+err.Error())
				}
				res = append(res, re)
				patSchemas = append(patSchemas, pats.vals[i])
			}
		}
		for _, p := range props {
			matched := false
			if pp != nil && pp.get(p.name) != nil {
				p.schemas = append(p.schemas, pp.get(p.name))
				matched = true
			}
			for i, re := range res {
				if re.MatchString(p.name) {
					p.schemas = append(p.schemas, patSchemas[i])
					matched = true
				}
			}
			if !matched && addl != nil {
				p.schemas = append(p.schemas, addl)
			}
		}
		switch {
		case len(res) == 0:
			if addl != nil {
				extra = append(extra, addl)
			}
		case allTrivial(patSchemas) && (addl == nil || allTrivial([]*jv{addl})):
			// any key, any value
		case addl == nil || !(addl.kind == jBool && !addl.b):
			// Any other key, its value satisfying every pattern's schema and the
			// additional one (a subset: right whichever of them applies to the key).
			extra = append(extra, patSchemas...)
			if addl != nil {
				extra = append(extra, addl)
			}
		default:
			// Additional keys: only those matching a pattern, with every pattern's schema
			// (a subset when a key matches only some of the patterns).
			if patKeys != nil {
				unsupported("patternProperties", c.path[n]+" (in several allOf branches)")
			}
			patKeys, patSch = pats.keys, patSchemas
		}
	}
	for _, s := range extra {
		if s.kind == jBool && !s.b {
			extraOK = false
		}
	}
	var keyExpr *Expr // the language of keys propertyNames allows
	if len(pnNodes) > 0 {
		keyExpr = c.conj(conj{nodes: append(pnNodes, c.synthOnce("string", "type", str("string")))}, m.at+"/propertyNames")
		g := &IR{Start: "key", Rules: map[string]*Expr{"key": keyExpr}}
		for k, e := range c.rules {
			g.Rules[k] = e // rules still being compiled are empty: names are only dropped
		}
		for _, p := range props {
			if !g.Match([]byte(jsonString(p.name))) {
				p.schemas = append(p.schemas, &jv{kind: jBool})
			}
		}
	}
	var items []*Expr
	var itemReq []bool
	for _, p := range props {
		v := c.conj(conj{nodes: p.schemas}, m.at+"/properties/"+escapePointer(p.name))
		if containsStr(m.forbidden, p.name) {
			v = Alt()
		}
		if isNothing(v) {
			if p.required {
				return Alt() // a required property no value satisfies
			}
			continue
		}
		items = append(items, Seq(c.keyColon(p.name), v))
		itemReq = append(itemReq, p.required)
	}
	var addl *Expr
	if extraOK {
		names := make([]string, len(props))
		for i, p := range props {
			names[i] = p.name
		}
		var key *Expr
		if keyExpr != nil {
			if patKeys != nil {
				unsupported("propertyNames", m.at+" (with patternProperties)")
			}
			for _, p := range props {
				if len(p.schemas) > 0 && p.schemas[len(p.schemas)-1].kind == jBool && !p.schemas[len(p.schemas)-1].b {
					continue // a name propertyNames rejects: no key spells it
				}
				if containsStr(m.forbidden, p.name) {
					unsupported("propertyNames", m.at+" (with a forbidden property)")
				}
				for _, s := range p.schemas {
					if !allTrivial([]*jv{s}) && !containsNode(extra, s) {
						unsupported("propertyNames", m.at+" (additional keys may spell a named property)")
					}
				}
			}
			key = keyExpr
		} else if patKeys != nil {
			addl = c.patternMembers(m, props, patKeys, patSch, extra)
		} else {
			key = Re(`"` + notNames(names) + `"`)
		}
		val := c.anyValue()
		if len(extra) > 0 {
			val = c.conj(conj{nodes: extra}, m.at+"/additionalProperties")
		}
		if key != nil && !isNothing(val) {
			addl = Seq(key, c.punct(":"), val)
		}
	}
	if m.maxProps >= 0 && m.minProps > m.maxProps {
		return c.empty("minProperties/maxProperties at %s: no count in range", m.at)
	}
	body := c.members(items, itemReq, addl, m.minProps, m.maxProps)
	return Seq(c.punct("{"), body, c.punct("}"))
}

func allTrivial(list []*jv) bool {
	for _, s := range list {
		if s.kind == jBool && s.b || onlyAnnotations(s) {
			continue
		}
		return false
	}
	return true
}

func onlyAnnotations(s *jv) bool {
	if s.kind != jObj {
		return false
	}
	for _, k := range s.keys {
		if !annotation[k] {
			return false
		}
	}
	return true
}

// members is the comma-separated sequence: items in order (optional ones skippable), then
// any number of addl (nil = none), with the total count in [lo, hi] (hi < 0 = unbounded).
func (c *schemaCompiler) members(items []*Expr, req []bool, addl *Expr, lo, hi int) *Expr {
	capK := lo
	if hi >= 0 {
		capK = hi
	}
	type key struct {
		i, k  int
		first bool
	}
	memo := map[key]*Expr{}
	var seq func(i, k int, first bool) *Expr
	seq = func(i, k int, first bool) *Expr {
		kk := key{i, k, first}
		if e, ok := memo[kk]; ok {
			return e
		}
		var e *Expr
		if i == len(items) {
			e = c.repeatList(addl, max(lo-k, 0), hi-k, hi < 0, first)
		} else {
			var alts []*Expr
			if hi < 0 || k+1 <= hi {
				sep := c.punct(",")
				if first {
					sep = Seq()
				}
				nk := min(k+1, capK)
				alts = append(alts, Seq(sep, items[i], seq(i+1, nk, false)))
			}
			if !req[i] {
				alts = append(alts, seq(i+1, k, first))
			}
			e = Alt(alts...)
			if len(alts) == 1 {
				e = alts[0]
			}
		}
		if capK > 0 || len(items) > 8 {
			// Shared tails become rules: as a tree the sequence would grow exponentially.
			name := c.newRule()
			c.rules[name] = e
			e = Ref(name)
		}
		memo[kk] = e
		return e
	}
	return seq(0, 0, true)
}

// repeatList: n copies of x comma-separated, n in [lo, hi] (unbounded if inf); first = no
// comma before the first copy.
func (c *schemaCompiler) repeatList(x *Expr, lo, hi int, inf bool, first bool) *Expr {
	if inf {
		hi = -1
	}
	if x == nil || !inf && hi <= 0 {
		if lo > 0 || !inf && hi < 0 {
			return Alt()
		}
		return Seq()
	}
	if !inf && lo > hi {
		return Alt()
	}
	comma := Seq(c.punct(","), x)
	if !first {
		return Rep(comma, lo, hi)
	}
	rest := Rep(comma, max(lo-1, 0), decOpt(hi))
	if lo == 0 {
		return Opt(Seq(x, rest))
	}
	return Seq(x, rest)
}

func decOpt(n int) int {
	if n < 0 {
		return -1
	}
	return n - 1
}

// patternMembers: additional keys when only pattern keys are allowed: a key matching pattern i
// takes a value satisfying schema i, every pattern that may also match it, and extra.
func (c *schemaCompiler) patternMembers(m *msch, props []*propSpec, keys []string, schemas []*jv, extra []*jv) *Expr {
	var alts []*Expr
	for i, k := range keys {
		re, err := ecmaRegexp(k)
		if err != nil {
			unsupported("patternProperties", m.at+": "+err.Error())
		}
		nodes := append([]*jv{}, extra...)
		for j := range keys {
			if j == i || !prefixDisjoint(keys[i], keys[j]) {
				nodes = append(nodes, schemas[j])
			}
		}
		for _, p := range props {
			if !re.MatchString(p.name) {
				continue
			}
			if containsStr(m.forbidden, p.name) {
				unsupported("patternProperties", m.at+" (pattern matches a forbidden property)")
			}
			// The key may also come as an additional one: fine when that path is at least
			// as strict (the named schemas are among the pattern's).
			for _, s := range p.schemas {
				if !allTrivial([]*jv{s}) && !containsNode(nodes, s) {
					unsupported("patternProperties", m.at+" (pattern matches a named property)")
				}
			}
		}
		enc, err := encodePattern(k)
		if err != nil {
			unsupported("patternProperties", m.at+": "+err.Error())
		}
		val := c.conj(conj{nodes: nodes}, m.at+"/patternProperties/"+escapePointer(k))
		if !isNothing(val) {
			alts = append(alts, Seq(Lit(`"`), Re(enc), Lit(`"`), c.punct(":"), val))
		}
	}
	if len(alts) == 0 {
		return nil
	}
	return Alt(alts...)
}

// closedObject is the additionalProperties of an object SchemaOptions.CloseObjects closes.
var closedObject = &jv{kind: jBool, b: false}
