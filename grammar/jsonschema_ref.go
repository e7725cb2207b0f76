// This file resolves $ref: it records $id/id/$anchor for every schema resource and follows
// URI references (RFC 3986, the parts schemas use) and JSON pointers.

package grammar

import (
	"net/url"
	"strconv"
	"strings"
)

// resolveURI resolves ref against base; unparsable input is returned as written.
func resolveURI(base, ref string) string {
	if base == "" {
		return ref
	}
	if strings.HasPrefix(ref, "#") {
		if i := strings.IndexByte(base, '#'); i >= 0 {
			base = base[:i]
		}
		return base + ref // a fragment: same document, whatever the base looks like
	}
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

func unescapeURI(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// walk numbers every object node and records $id/id and $anchor.
func (c *schemaCompiler) walk(v *jv, path, base string, depth int) {
	if v.kind == jArr {
		for i, e := range v.arr {
			c.walk(e, path+"/"+strconv.Itoa(i), base, depth+1)
		}
		return
	}
	if v.kind != jObj && v.kind != jBool {
		return
	}
	c.index[v] = len(c.index)
	c.path[v] = path
	if v.kind == jBool {
		c.base[v] = base
		return
	}
	for _, key := range []string{"$id", "id"} {
		if id := v.get(key); id != nil && id.kind == jStr && !(key == "id" && v.get("$id") != nil) {
			abs := resolveURI(base, id.s)
			if i := strings.IndexByte(abs, '#'); i >= 0 {
				if frag := abs[i+1:]; frag != "" && !strings.HasPrefix(frag, "/") {
					c.ids[abs] = v // draft-06 style plain-name id
				}
				abs = abs[:i]
			}
			if abs != "" && abs != base {
				base = abs
				if _, dup := c.ids[abs]; !dup {
					c.ids[abs] = v
				}
			}
			break
		}
	}
	if a := v.get("$anchor"); a != nil && a.kind == jStr {
		c.ids[base+"#"+a.s] = v
	}
	c.base[v] = base
	for i, k := range v.keys {
		c.walk(v.vals[i], path+"/"+escapePointer(k), base, depth+1)
	}
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// markRefTargets finds every node a $ref points to (those get rules, so recursion works).
func (c *schemaCompiler) markRefTargets() {
	var visit func(v *jv)
	visit = func(v *jv) {
		switch v.kind {
		case jArr:
			for _, e := range v.arr {
				visit(e)
			}
		case jObj:
			if r := v.get("$ref"); r != nil && r.kind == jStr {
				if t := c.tryResolve(v, r.s); t != nil {
					c.refTarget[t] = true
				}
			}
			for _, e := range v.vals {
				visit(e)
			}
		}
	}
	visit(c.root)
}

func (c *schemaCompiler) resolve(from, r *jv) *jv {
	if r.kind != jStr {
		fail("keyword \"$ref\" at %s must be a string", c.path[from])
	}
	t := c.tryResolve(from, r.s)
	if t == nil {
		fail("keyword \"$ref\" at %s: cannot resolve %q", c.path[from], r.s)
	}
	return t
}

func (c *schemaCompiler) tryResolve(from *jv, ref string) *jv {
	base := c.base[from]
	abs := resolveURI(base, ref)
	if strings.HasPrefix(ref, "#") {
		abs = base + ref // same resource, whatever its base looks like
	}
	doc, frag := abs, ""
	if i := strings.IndexByte(abs, '#'); i >= 0 {
		doc, frag = abs[:i], abs[i+1:]
	}
	var start *jv
	if doc == "" {
		start = c.root
	} else if n := c.ids[doc]; n != nil {
		start = n
	} else if doc == c.base[c.root] {
		start = c.root
	} else {
		return nil
	}
	if frag == "" {
		return start
	}
	if !strings.HasPrefix(frag, "/") {
		return c.ids[doc+"#"+frag]
	}
	cur := start
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = unescapeURI(tok)
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch cur.kind {
		case jObj:
			cur = cur.get(tok)
		case jArr:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.arr) {
				return nil
			}
			cur = cur.arr[i]
		default:
			return nil
		}
		if cur == nil {
			return nil
		}
	}
	return cur
}
