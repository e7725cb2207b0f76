// This file implements attribute paths and the ordering used by sort, min, max and dictsort.
package chattmpl

import (
	"errors"
	"sort"
	"strconv"
	"strings"
)

// attrPath follows a dotted attribute path ("a.b.0") through dicts and lists.
func attrPath(v any, path string) any {
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case *Map:
			if c, ok := x.Get(part); ok {
				v = c
			} else {
				return undefined{}
			}
		case *namespace:
			if c, ok := x.m.Get(part); ok {
				v = c
			} else {
				return undefined{}
			}
		case *list:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x.items) {
				return undefined{}
			}
			v = x.items[i]
		default:
			return undefined{}
		}
	}
	return v
}

// compareValues orders values like the reference's sort: numbers (and booleans) together,
// strings (case-insensitively unless caseSensitive), none with none; others are an error.
func compareValues(a, b any, caseSensitive bool) (int, error) {
	_, au := a.(undefined)
	_, bu := b.(undefined)
	switch {
	case a == nil && b == nil, au && bu:
		return 0, nil
	case a == nil || b == nil || au || bu:
		return 0, errors.New("Cannot compare " + typeName(a) + " with " + typeName(b))
	}
	_, ab := a.(bool)
	_, bb := b.(bool)
	if (isNumber(a) || ab) && (isNumber(b) || bb) {
		x, y := toFloat(a), toFloat(b)
		switch {
		case x < y:
			return -1, nil
		case x > y:
			return 1, nil
		}
		return 0, nil
	}
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 {
		if typeName(a) != typeName(b) {
			return 0, errors.New("Cannot compare different types: " + typeName(a) + " and " + typeName(b))
		}
		return 0, errors.New("Cannot compare type: " + typeName(a))
	}
	if !caseSensitive {
		as, bs = jsLower(as), jsLower(bs)
	}
	return strings.Compare(as, bs), nil
}

func sortValues(items []any, key func(any) any, cs, reverse bool) (any, error) {
	out := append([]any{}, items...)
	var err error
	sort.SliceStable(out, func(i, j int) bool {
		c, e := compareValues(key(out[i]), key(out[j]), cs)
		if e != nil && err == nil {
			err = e
		}
		if reverse {
			c = -c
		}
		return c < 0
	})
	if err != nil {
		return nil, err
	}
	return newList(out), nil
}

func dictsort(m *Map, args []any, kw *Map) (any, error) {
	cs, ok1 := arg(args, kw, 0, "case_sensitive", false).(bool)
	by, ok2 := arg(args, kw, 1, "by", "key").(string)
	reverse, ok3 := arg(args, kw, 2, "reverse", false).(bool)
	if !ok1 || !ok2 || !ok3 || (by != "key" && by != "value") {
		return nil, errors.New("dictsort: bad arguments (case_sensitive bool, by 'key'|'value', reverse bool)")
	}
	idx := 0
	if by == "value" {
		idx = 1
	}
	return sortValues(dictItems(m).items, func(v any) any { return v.(*list).items[idx] }, cs, reverse)
}
