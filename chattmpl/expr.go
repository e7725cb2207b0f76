// This file implements expression evaluation: literals, names, member access and slicing,
// calls with keyword arguments, unary/binary operators (with the reference's JavaScript-flavoured
// semantics for ==, %, + and ~), tests, select and ternary expressions.
package chattmpl

import (
	"errors"
	"unicode/utf16"
)

func (in *interp) eval(n node, e *env) (any, error) {
	switch x := n.(type) {
	case *litNode:
		return x.v, nil
	case *identNode:
		return e.lookup(x.name), nil
	case *listNode, *tupleNode:
		items := listItems(n)
		out := make([]any, len(items))
		for i, it := range items {
			v, err := in.eval(it, e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return newList(out), nil
	case *dictNode:
		m := NewMap()
		for i, k := range x.keys {
			kv, err := in.eval(k, e)
			if err != nil {
				return nil, err
			}
			ks, ok := kv.(string)
			if !ok {
				return nil, in.errAt(k, "Object keys must be strings: got %s", typeName(kv))
			}
			v, err := in.eval(x.vals[i], e)
			if err != nil {
				return nil, err
			}
			m.Set(ks, v)
		}
		return m, nil
	case *memberNode:
		return in.evalMember(x, e)
	case *callNode:
		args, kw, err := in.evalArgs(x.args, e)
		if err != nil {
			return nil, err
		}
		fn, err := in.eval(x.callee, e)
		if err != nil {
			return nil, err
		}
		c, ok := fn.(*callable)
		if !ok {
			return nil, in.errAt(x, "Cannot call something that is not a function: got %s", typeName(fn))
		}
		v, err := c.fn(in, args, kw, e)
		if err != nil {
			return nil, in.locate(x, err)
		}
		return v, nil
	case *unaryNode:
		v, err := in.eval(x.x, e)
		if err != nil {
			return nil, err
		}
		if x.op == "not" {
			return !truthy(v), nil
		}
		sign := int64(1)
		if x.op == "-" {
			sign = -1
		}
		switch a := v.(type) {
		case int64:
			return sign * a, nil
		case float64:
			return float64(sign) * a, nil
		case bool:
			if a {
				return sign, nil
			}
			return int64(0), nil
		}
		return nil, in.errAt(x, "Unknown operator %q for %s", x.op, typeName(v))
	case *binaryNode:
		return in.evalBinary(x, e)
	case *filterNode:
		v, err := in.eval(x.x, e)
		if err != nil {
			return nil, err
		}
		return in.applyFilter(x, v, e)
	case *testNode:
		v, err := in.eval(x.x, e)
		if err != nil {
			return nil, err
		}
		args, _, err := in.evalArgs(x.args, e)
		if err != nil {
			return nil, err
		}
		r, err := runTest(x.name, v, args)
		if err != nil {
			return nil, in.errAt(x, "%s", err.Error())
		}
		return r != x.negate, nil
	case *selectNode:
		t, err := in.eval(x.test, e)
		if err != nil {
			return nil, err
		}
		if !truthy(t) {
			return undefined{}, nil
		}
		return in.eval(x.lhs, e)
	case *ternaryNode:
		c, err := in.eval(x.cond, e)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return in.eval(x.a, e)
		}
		return in.eval(x.b, e)
	}
	return nil, in.errAt(n, "unexpected statement in expression")
}

func listItems(n node) []node {
	if l, ok := n.(*listNode); ok {
		return l.items
	}
	return n.(*tupleNode).items
}

// evalArgs evaluates call arguments: positional (with *spread) first, then keyword ones.
func (in *interp) evalArgs(args []node, e *env) ([]any, *Map, error) {
	var pos []any
	for _, a := range args {
		switch x := a.(type) {
		case *kwargNode, *kwSpreadNode:
		case *spreadNode:
			v, err := in.eval(x.x, e)
			if err != nil {
				return nil, nil, err
			}
			l, ok := v.(*list)
			if !ok {
				return nil, nil, in.errAt(a, "Cannot unpack non-iterable type: %s", typeName(v))
			}
			pos = append(pos, l.items...)
		default:
			v, err := in.eval(a, e)
			if err != nil {
				return nil, nil, err
			}
			pos = append(pos, v)
		}
	}
	var kw *Map
	add := func(a node, k string, v any) error {
		if kw == nil {
			kw = NewMap()
		}
		if _, dup := kw.Get(k); dup {
			return in.errAt(a, "Got multiple values for keyword argument '%s'", k)
		}
		kw.Set(k, v)
		return nil
	}
	for _, a := range args {
		switch x := a.(type) {
		case *kwargNode:
			v, err := in.eval(x.value, e)
			if err != nil {
				return nil, nil, err
			}
			if err := add(a, x.key, v); err != nil {
				return nil, nil, err
			}
		case *kwSpreadNode:
			v, err := in.eval(x.x, e)
			if err != nil {
				return nil, nil, err
			}
			m, ok := v.(*Map)
			if !ok {
				return nil, nil, in.errAt(a, "Argument after ** must be a mapping, not %s", typeName(v))
			}
			for _, k := range m.Keys {
				if err := add(a, k, m.Values[k]); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return pos, kw, nil
}

func (in *interp) evalMember(x *memberNode, e *env) (any, error) {
	obj, err := in.eval(x.obj, e)
	if err != nil {
		return nil, err
	}
	var prop any
	switch {
	case x.computed:
		if sl, ok := x.prop.(*sliceNode); ok {
			return in.evalSlice(obj, sl, e)
		}
		prop, err = in.eval(x.prop, e)
		if err != nil {
			return nil, err
		}
	default:
		if id, ok := x.prop.(*identNode); ok {
			prop = id.name
		} else {
			prop = x.prop.(*litNode).v
		}
	}
	v, err := member(obj, prop)
	if err != nil {
		return nil, in.errAt(x, "%s", err.Error())
	}
	return v, nil
}

// member is obj[prop] / obj.prop: dict keys first, then built-in methods; missing is Undefined.
func member(obj, prop any) (any, error) {
	switch o := obj.(type) {
	case *Map, *namespace:
		key, ok := prop.(string)
		if !ok {
			return nil, errors.New("Cannot access property with non-string: got " + typeName(prop))
		}
		if ns, ok := o.(*namespace); ok {
			if v, ok := ns.m.Get(key); ok {
				return v, nil
			}
			return undefined{}, nil
		}
		m := o.(*Map)
		if v, ok := m.Get(key); ok {
			return v, nil
		}
		if f := dictMethod(m, key); f != nil {
			return f, nil
		}
		return undefined{}, nil
	case *list, string:
		switch p := prop.(type) {
		case int64:
			if l, ok := o.(*list); ok {
				i := p
				if i < 0 {
					i += int64(len(l.items))
				}
				if i < 0 || i >= int64(len(l.items)) {
					return undefined{}, nil
				}
				return l.items[i], nil
			}
			u := utf16.Encode([]rune(o.(string)))
			i := p
			if i < 0 {
				i += int64(len(u))
			}
			if i < 0 || i >= int64(len(u)) {
				return undefined{}, nil
			}
			return string(utf16.Decode(u[i : i+1])), nil
		case string:
			if l, ok := o.(*list); ok {
				if p == "length" {
					return int64(len(l.items)), nil
				}
				return undefined{}, nil
			}
			if f := stringMethod(o.(string), p); f != nil {
				return f, nil
			}
			return undefined{}, nil
		}
		return nil, errors.New("Cannot access property with non-string/non-number: got " + typeName(prop))
	}
	if _, ok := prop.(string); !ok {
		return nil, errors.New("Cannot access property with non-string: got " + typeName(prop))
	}
	return undefined{}, nil
}

func (in *interp) evalSlice(obj any, s *sliceNode, e *env) (any, error) {
	var idx [3]*int64
	for k, n := range []node{s.start, s.stop, s.step} {
		if n == nil {
			continue
		}
		v, err := in.eval(n, e)
		if err != nil {
			return nil, err
		}
		switch i := v.(type) {
		case int64:
			idx[k] = &i
		case undefined:
		default:
			return nil, in.errAt(s, "Slice indices must be integers or undefined, got %s", typeName(v))
		}
	}
	step := int64(1)
	if idx[2] != nil {
		step = *idx[2]
	}
	if step == 0 {
		return nil, in.errAt(s, "slice step cannot be zero")
	}
	switch o := obj.(type) {
	case *list:
		return newList(sliceIdx(o.items, idx[0], idx[1], step)), nil
	case string:
		return string(sliceIdx([]rune(o), idx[0], idx[1], step)), nil
	}
	return nil, in.errAt(s, "Slice object must be an array or string")
}

// sliceIdx is Python slicing a[start:stop:step] (step != 0).
func sliceIdx[T any](a []T, start, stop *int64, step int64) []T {
	n := int64(len(a))
	var lo, hi int64
	if step > 0 {
		lo, hi = 0, n
		if start != nil {
			lo = clampIdx(*start, n, 0, n)
		}
		if stop != nil {
			hi = clampIdx(*stop, n, 0, n)
		}
	} else {
		lo, hi = n-1, -1
		if start != nil {
			lo = clampIdx(*start, n, -1, n-1)
		}
		if stop != nil {
			hi = clampIdx(*stop, n, -1, n-1)
		}
	}
	out := []T{}
	for i := lo; (step > 0 && i < hi) || (step < 0 && i > hi); i += step {
		out = append(out, a[i])
	}
	return out
}

func clampIdx(i, n, lo, hi int64) int64 {
	if i < 0 {
		i += n
	}
	return max(lo, min(i, hi))
}

func (in *interp) evalBinary(x *binaryNode, e *env) (any, error) {
	l, err := in.eval(x.l, e)
	if err != nil {
		return nil, err
	}
	switch x.op {
	case "and":
		if !truthy(l) {
			return l, nil
		}
		return in.eval(x.r, e)
	case "or":
		if truthy(l) {
			return l, nil
		}
		return in.eval(x.r, e)
	}
	r, err := in.eval(x.r, e)
	if err != nil {
		return nil, err
	}
	v, err := binaryOp(x.op, l, r)
	if err != nil {
		return nil, in.errAt(x, "%s", err.Error())
	}
	return v, nil
}
