// This file compiles JSON Schema to the IR: it resolves $ref, merges allOf (and $ref
// siblings) into one set of constraints, distributes anyOf/oneOf, and hands each type to the
// emitters in jsonschema_*.go. Whatever cannot be compiled exactly is refused (an error naming
// the keyword) or narrowed to a subset of the valid instances, never widened.

package grammar

import (
	"fmt"
	"regexp"
	"sort"
)

// SchemaOptions configures JSONSchema.
type SchemaOptions struct {
	// Whitespace allows JSON whitespace between tokens; false = compact JSON only (as
	// json.Marshal writes it), which keeps a weak model from wandering into whitespace.
	Whitespace bool
	// MaxRules bounds the grammar's size (0 = 10,000 rules).
	MaxRules int
	// CloseObjects treats an object schema that lists properties but says nothing of
	// additionalProperties (nor patternProperties) as closed: only the listed properties are
	// generated, as vLLM's default backend (XGrammar) does. The output stays valid (a subset of
	// what the schema accepts); without it a model may add keys of its own, and a weak or
	// random one wanders on until max_tokens. Serving sets it; bench structured does not (it
	// measures the schema's own language).
	CloseObjects bool
}

// JSONSchema compiles a JSON Schema (draft 2020-12 and older drafts' forms) to an IR whose
// language is the JSON texts the schema accepts. An invalid or unsatisfiable schema is an error
// naming the keyword and the reason.
func JSONSchema(schema []byte, opt SchemaOptions) (g *IR, err error) {
	root, err := parseJV(schema)
	if err != nil {
		return nil, fmt.Errorf("grammar: schema is not JSON: %v", err)
	}
	if root.kind != jObj && root.kind != jBool {
		return nil, fmt.Errorf("grammar: schema must be an object or a boolean")
	}
	if opt.MaxRules <= 0 {
		opt.MaxRules = 10000
	}
	c := &schemaCompiler{opt: opt, root: root, rules: map[string]*Expr{},
		conjRule: map[string]string{}, index: map[*jv]int{}, path: map[*jv]string{},
		base: map[*jv]string{}, ids: map[string]*jv{}, refTarget: map[*jv]bool{}, nots: map[*jv]*jv{}, reqs: map[string]*jv{}, negs: map[*jv][]*jv{}, shared: map[string]*jv{}}
	c.walk(root, "#", "", 0)
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(schemaErr); ok {
				g, err = nil, e
				return
			}
			panic(r)
		}
	}()
	c.markRefTargets()
	body := c.conj(conj{nodes: []*jv{root}}, "#")
	if isNothing(body) {
		why := "no JSON value is valid"
		if c.why != "" {
			why = c.why
		}
		return nil, fmt.Errorf("grammar: schema at # is unsatisfiable: %s", why)
	}
	c.rules["root"] = body
	g = &IR{Start: "root", Rules: c.rules}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := checkRegexes(g); err != nil {
		return nil, err
	}
	return g, nil
}

// schemaErr carries a compile error up through panic (recovered in JSONSchema).
type schemaErr struct{ msg string }

func (e schemaErr) Error() string { return e.msg }

func fail(format string, args ...any) {
	panic(schemaErr{"grammar: " + fmt.Sprintf(format, args...)})
}

func unsupported(kw, at string) {
	fail("unsupported keyword %q at %s", kw, at)
}

type schemaCompiler struct {
	opt       SchemaOptions
	root      *jv
	rules     map[string]*Expr
	conjRule  map[string]string // conjunction key -> rule name
	index     map[*jv]int       // node -> id (for keys)
	path      map[*jv]string    // node -> JSON pointer (for messages)
	base      map[*jv]string    // node -> base URI of its resource
	ids       map[string]*jv    // absolute URI (no fragment) or base+"#anchor" -> node
	refTarget map[*jv]bool
	nots      map[*jv]*jv // synthetic {"not": x} nodes, one per x
	reqs      map[string]*jv
	negs      map[*jv][]*jv
	shared    map[string]*jv
	depth     int
	why       string // the last reason a type admitted no value
	nodes     int
}

// conj is a conjunction of schema nodes, all of which an instance must satisfy; used records
// the anyOf/oneOf arrays already distributed.
type conj struct {
	nodes []*jv
	used  []*jv
}

func (c *schemaCompiler) key(k conj) string {
	ids := make([]int, 0, len(k.nodes))
	for _, n := range k.nodes {
		ids = append(ids, c.index[n])
	}
	sort.Ints(ids)
	u := make([]int, 0, len(k.used))
	for _, n := range k.used {
		u = append(u, c.index[n])
	}
	sort.Ints(u)
	return fmt.Sprint(ids, u)
}

// flatten resolves $ref and allOf into a flat list of schema objects (false short-circuits).
func (c *schemaCompiler) flatten(k conj) (conj, bool) {
	var out []*jv
	seen := map[*jv]bool{}
	inChain := map[*jv]bool{} // the $ref/allOf chain being followed: a schema met again is a cycle
	var add func(v *jv, depth int) bool
	add = func(v *jv, depth int) bool {
		if depth > 64 {
			fail("$ref/allOf chain too deep at %s", c.path[v])
		}
		if inChain[v] {
			fail("$ref/allOf cycle at %s: the schema refers to itself without describing a value", c.path[v])
		}
		if seen[v] {
			return true
		}
		seen[v] = true
		inChain[v] = true
		defer delete(inChain, v)
		switch v.kind {
		case jBool:
			return v.b
		case jObj:
		default:
			fail("schema at %s must be an object or a boolean", c.path[v])
		}
		out = append(out, v)
		if r := v.get("$ref"); r != nil {
			if !add(c.resolve(v, r), depth+1) {
				return false
			}
		}
		if x := v.get("not"); x != nil && onlyKey(x, "not") {
			if !add(x.get("not"), depth+1) {
				return false
			}
		}
		if a := v.get("allOf"); a != nil {
			if a.kind != jArr || len(a.arr) == 0 {
				fail("keyword \"allOf\" at %s must be a non-empty array", c.path[v])
			}
			for _, s := range a.arr {
				if !add(s, depth+1) {
					return false
				}
			}
		}
		return true
	}
	for _, n := range k.nodes {
		if !add(n, 0) {
			return conj{}, false
		}
	}
	return conj{nodes: out, used: k.used}, true
}

// conj compiles a conjunction of schemas.
func (c *schemaCompiler) conj(k conj, at string) *Expr {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > 400 {
		fail("schema nested too deeply at %s", at)
	}
	k, ok := c.flatten(k)
	if !ok {
		return Alt()
	}
	key := c.key(k)
	if name, ok := c.conjRule[key]; ok {
		return Ref(name)
	}
	needRule := false
	for _, n := range k.nodes {
		if c.refTarget[n] {
			needRule = true
		}
	}
	if !needRule {
		return c.distribute(k, at)
	}
	name := c.newRule()
	c.conjRule[key] = name
	c.rules[name] = Alt() // placeholder while compiling (recursion refers to the name)
	c.rules[name] = c.distribute(k, at)
	return Ref(name)
}

// empty records why a type admits no value and returns the empty language.
func (c *schemaCompiler) empty(format, at string) *Expr {
	c.why = fmt.Sprintf(format, at)
	return Alt()
}

// newRule reserves a fresh rule name.
func (c *schemaCompiler) newRule() string {
	if len(c.rules) >= c.opt.MaxRules {
		fail("schema too large: more than %d rules", c.opt.MaxRules)
	}
	name := fmt.Sprintf("s%d", len(c.rules))
	c.rules[name] = Alt()
	return name
}

// distribute expands the first anyOf/oneOf not yet used into an alternation.
func (c *schemaCompiler) distribute(k conj, at string) *Expr {
	for _, n := range k.nodes {
		for _, kw := range []string{"anyOf", "oneOf"} {
			a := n.get(kw)
			if a == nil || containsNode(k.used, a) {
				continue
			}
			if a.kind != jArr || len(a.arr) == 0 {
				fail("keyword %q at %s must be a non-empty array", kw, c.path[n])
			}
			exclusive := false // each branch also excludes the others
			if kw == "oneOf" && len(a.arr) > 1 && !c.disjoint(a.arr, k.nodes) {
				for _, b := range a.arr {
					if c.negatable(b) {
						continue
					}
					if _, ok := c.negations(b); !ok || len(a.arr) > 4 {
						unsupported("oneOf", c.path[n]+" (branches may overlap)")
					}
				}
				exclusive = true
			}
			used := append(append([]*jv{}, k.used...), a)
			var alts []*Expr
			for i, b := range a.arr {
				nodes := append(append([]*jv{}, k.nodes...), b)
				if exclusive {
					for j, o := range a.arr {
						if j != i {
							nodes = append(nodes, c.notNode(o))
						}
					}
				}
				e := c.conj(conj{nodes: nodes, used: used}, fmt.Sprintf("%s/%s/%d", c.path[n], kw, i))
				if !isNothing(e) {
					alts = append(alts, e)
				}
			}
			if len(alts) == 1 {
				return alts[0]
			}
			return Alt(alts...)
		}
	}
	if e := c.distributeNot(k, at); e != nil {
		return e
	}
	if e := c.distributeIf(k, at); e != nil {
		return e
	}
	if e := c.distributeDeps(k, at); e != nil {
		return e
	}
	m := c.merge(k)
	return c.emit(m)
}

// checkRegexes makes sure every regex terminal compiles (Go caps repeat counts and sizes).
func checkRegexes(g *IR) error {
	seen := map[*Expr]bool{}
	var check func(e *Expr) error
	check = func(e *Expr) error {
		if seen[e] {
			return nil
		}
		seen[e] = true
		if e.Kind == KindRegex {
			if _, err := regexp.Compile(e.Text); err != nil {
				return fmt.Errorf("grammar: a regular expression the schema needs is too large or invalid: %v", err)
			}
		}
		for _, s := range e.Subs {
			if err := check(s); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range g.ruleNames() {
		if err := check(g.Rules[n]); err != nil {
			return err
		}
	}
	return nil
}

// onlyKey: x is an object whose one keyword, besides annotations, is kw.
func onlyKey(x *jv, kw string) bool {
	if x.kind != jObj || x.get(kw) == nil {
		return false
	}
	for _, k := range x.keys {
		if k != kw && !annotation[k] {
			return false
		}
	}
	return true
}

// notNode is a schema node {"not": x} (made once per x, so conjunction keys stay stable).
func (c *schemaCompiler) notNode(x *jv) *jv {
	if n, ok := c.nots[x]; ok {
		return n
	}
	n := &jv{kind: jObj, keys: []string{"not"}, vals: []*jv{x}}
	c.nots[x] = n
	c.index[n] = len(c.index)
	c.path[n] = c.path[x] + "(negated)"
	c.base[n] = c.base[x]
	return n
}

// negatable: applyNots can honour {"not": x}.
func (c *schemaCompiler) negatable(x *jv) bool {
	if x.kind == jObj && len(x.keys) == 1 && x.keys[0] == "$ref" {
		if t := c.tryResolve(x, x.vals[0].s); t != nil {
			x = t
		}
	}
	if x.kind == jBool {
		return true
	}
	for _, kw := range []string{"type", "enum", "const"} {
		if onlyKey(x, kw) {
			return true
		}
	}
	if onlyKey(x, "required") {
		r := x.get("required")
		return r.kind == jArr && len(r.arr) == 1 && r.arr[0].kind == jStr
	}
	if x.kind == jObj {
		for _, k := range x.keys {
			if !annotation[k] {
				return false
			}
		}
		return true
	}
	return false
}

func containsNode(list []*jv, v *jv) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func isNothing(e *Expr) bool { return e.Kind == KindAlt && len(e.Subs) == 0 }
