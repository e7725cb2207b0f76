// This file implements the binary operators with the reference's semantics: JavaScript-style ==
// (loose) and `in` (strict) equality, truncated %, floor //, and string concatenation with + and ~.
package chattmpl

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

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
