// This file implements expression evaluation: literals, names, member access and slicing,
// calls with keyword arguments, unary/binary operators (with the reference's JavaScript-flavoured
// semantics for ==, %, + and ~), tests, select and ternary expressions.
package chattmpl

import (
	"errors"
	"math"
	"strconv"
	"strings"
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

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case bool:
		if x {
			return 1
		}
	}
	return 0
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

func binaryOp(op string, l, r any) (any, error) {
	switch op {
	case "==":
		return looseEqual(l, r), nil
	case "!=":
		return !looseEqual(l, r), nil
	}
	_, lu := l.(undefined)
	_, ru := r.(undefined)
	if lu || ru {
		if ru && (op == "in" || op == "not in") {
			return op == "not in", nil
		}
		return nil, errors.New("Cannot perform operation " + op + " on undefined values")
	}
	if l == nil || r == nil {
		return nil, errors.New("Cannot perform operation on null values")
	}
	if op == "~" {
		return primitiveString(l) + primitiveString(r), nil
	}
	_, lb := l.(bool)
	_, rb := r.(bool)
	if op == "**" && (isNumber(l) || lb) && (isNumber(r) || rb) {
		a, b := toFloat(l), toFloat(r)
		if a == 0 && b < 0 {
			return nil, errors.New("0.0 cannot be raised to a negative power")
		}
		res := math.Pow(a, b)
		if math.IsNaN(res) || math.IsInf(res, 0) {
			return nil, errors.New("Exponentiation result is not a finite real number")
		}
		_, lf := l.(float64)
		_, rf := r.(float64)
		if lf || rf || b < 0 {
			return res, nil
		}
		return intOrFloat(res), nil
	}
	if isNumber(l) && isNumber(r) {
		li, lInt := l.(int64)
		ri, rInt := r.(int64)
		a, b := toFloat(l), toFloat(r)
		both := lInt && rInt
		switch op {
		case "+", "-", "*":
			if both {
				switch op {
				case "+":
					return li + ri, nil
				case "-":
					return li - ri, nil
				default:
					return li * ri, nil
				}
			}
			switch op {
			case "+":
				return a + b, nil
			case "-":
				return a - b, nil
			default:
				return a * b, nil
			}
		case "/":
			return a / b, nil
		case "//":
			if both && ri != 0 {
				q := li / ri
				if (li%ri != 0) && ((li < 0) != (ri < 0)) {
					q--
				}
				return q, nil
			}
			if both {
				return intOrFloat(math.Floor(a / b)), nil
			}
			return math.Floor(a / b), nil
		case "%":
			if both {
				if ri == 0 {
					return math.NaN(), nil
				}
				return li % ri, nil
			}
			return math.Mod(a, b), nil
		case "<":
			return a < b, nil
		case ">":
			return a > b, nil
		case "<=":
			return a <= b, nil
		case ">=":
			return a >= b, nil
		}
	} else if ll, ok := l.(*list); ok {
		if rl, ok := r.(*list); ok && op == "+" {
			items := append(append([]any{}, ll.items...), rl.items...)
			return newList(items), nil
		}
	}
	_, lIsList := l.(*list)
	if rl, ok := r.(*list); ok && !lIsList && (op == "in" || op == "not in") {
		found := false
		for _, it := range rl.items {
			if strictEqual(it, l) {
				found = true
				break
			}
		}
		return found == (op == "in"), nil
	}
	ls, lStr := l.(string)
	rs, rStr := r.(string)
	if (lStr || rStr) && op == "+" {
		return primitiveString(l) + primitiveString(r), nil
	}
	if lStr && rStr && (op == "in" || op == "not in") {
		return strings.Contains(rs, ls) == (op == "in"), nil
	}
	if rm, ok := r.(*Map); ok && lStr && (op == "in" || op == "not in") {
		_, has := rm.Get(ls)
		return has == (op == "in"), nil
	}
	return nil, errors.New("Unknown operator \"" + op + "\" between " + typeName(l) + " and " + typeName(r))
}

func intOrFloat(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return int64(f)
	}
	return f
}

// strictEqual is JavaScript's === on the reference's underlying values: numbers by value (1 and
// 1.0 are equal), strings and booleans by value, lists and dicts by identity.
func strictEqual(a, b any) bool {
	if isNumber(a) && isNumber(b) {
		return toFloat(a) == toFloat(b)
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case bool, string:
		return a == b
	case *list:
		y, ok := b.(*list)
		return ok && x == y
	case *Map:
		y, ok := b.(*Map)
		return ok && x == y
	case *namespace:
		y, ok := b.(*namespace)
		return ok && x == y
	case *callable:
		y, ok := b.(*callable)
		return ok && x == y
	}
	return false
}

// looseEqual is JavaScript's == on the reference's underlying values (none == undefined,
// booleans and numeric strings compare as numbers).
func looseEqual(a, b any) bool {
	_, au := a.(undefined)
	_, bu := b.(undefined)
	if (a == nil || au) && (b == nil || bu) {
		return true
	}
	if a == nil || au || b == nil || bu {
		return false
	}
	if strictEqual(a, b) {
		return true
	}
	num := func(v any) (float64, bool) {
		switch x := v.(type) {
		case int64, float64, bool:
			return toFloat(x), true
		case string:
			t := strings.TrimFunc(x, isJSSpace)
			if t == "" {
				return 0, true
			}
			f, err := strconv.ParseFloat(t, 64)
			if err != nil || strings.ContainsAny(t, "_xXpP") || strings.EqualFold(strings.TrimLeft(t, "+-"), "inf") || strings.EqualFold(strings.TrimLeft(t, "+-"), "infinity") || strings.EqualFold(t, "nan") {
				return math.NaN(), true
			}
			return f, true
		}
		return 0, false
	}
	_, as := a.(string)
	_, bs := b.(string)
	if as && bs {
		return false
	}
	x, okA := num(a)
	y, okB := num(b)
	if okA && okB {
		return x == y
	}
	return false
}
