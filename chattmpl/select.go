// This file implements the filters that take a test or a filter by name: select, reject,
// selectattr, rejectattr and map (map(attribute=...) and map('filter', args...)).
package chattmpl

import "errors"

func (in *interp) selectFilter(name string, v any, args []any, kw *Map, e *env) (any, error) {
	l, ok := v.(*list)
	if !ok {
		if m, isMap := v.(*Map); isMap && name != "map" {
			return nil, errors.New("Unknown ObjectValue filter: " + name)
		} else if isMap {
			l = dictItemsKeys(m)
		} else {
			return nil, errors.New("Cannot apply filter \"" + name + "\" to type: " + typeName(v))
		}
	}
	switch name {
	case "map":
		if a, ok := kw.Get("attribute"); ok {
			attr, ok := a.(string)
			if !ok {
				return nil, errors.New("attribute must be a string")
			}
			def, hasDef := kw.Get("default")
			out := make([]any, len(l.items))
			for i, it := range l.items {
				switch it.(type) {
				case *Map, *namespace:
				default:
					return nil, errors.New("items in map must be an object")
				}
				r := attrPath(it, attr)
				if _, u := r.(undefined); u && hasDef {
					r = def
				}
				out[i] = r
			}
			return newList(out), nil
		}
		if len(args) == 0 {
			return nil, errors.New("map needs a filter name or attribute=")
		}
		fname, ok := args[0].(string)
		if !ok {
			return nil, errors.New("map filter name must be a string")
		}
		out := make([]any, len(l.items))
		for i, it := range l.items {
			r, err := in.filter(fname, it, args[1:], kw, e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return newList(out), nil
	case "selectattr", "rejectattr":
		if len(args) == 0 {
			return nil, errors.New("`" + name + "` needs an attribute name")
		}
		attr, ok := args[0].(string)
		if !ok {
			return nil, errors.New("arguments of `" + name + "` must be strings")
		}
		var out []any
		for _, it := range l.items {
			var m *Map
			switch x := it.(type) {
			case *Map:
				m = x
			case *namespace:
				m = x.m
			default:
				return nil, errors.New("`" + name + "` can only be applied to array of objects")
			}
			res := false
			if a, ok := m.Get(attr); ok {
				r, err := testBy(a, args[1:])
				if err != nil {
					return nil, err
				}
				res = r
			}
			if res == (name == "selectattr") {
				out = append(out, it)
			}
		}
		return newList(out), nil
	default: // select, reject
		var out []any
		for _, it := range l.items {
			r, err := testBy(it, args)
			if err != nil {
				return nil, err
			}
			if r == (name == "select") {
				out = append(out, it)
			}
		}
		return newList(out), nil
	}
}

// testBy applies test args[0] (with args[1:]) to v, or truthiness when there is no test.
func testBy(v any, args []any) (bool, error) {
	if len(args) == 0 {
		return truthy(v), nil
	}
	t, ok := args[0].(string)
	if !ok {
		return false, errors.New("test name must be a string")
	}
	return runTest(t, v, args[1:])
}

func dictItemsKeys(m *Map) *list {
	out := make([]any, len(m.Keys))
	for i, k := range m.Keys {
		out[i] = k
	}
	return newList(out)
}
