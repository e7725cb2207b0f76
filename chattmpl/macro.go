// This file implements macros and call blocks: argument binding (defaults, keyword arguments,
// kwargs/varargs) and the caller() of a call block.
package chattmpl

import "errors"

// makeMacro builds a callable for a macro or call-block body. Like the reference, the body's
// scope is a child of the caller's environment (or of fixed when non-nil).
func (in *interp) makeMacro(name string, params []node, body []node, fixed *env) *callable {
	special := specialArgs(params, body)
	return &callable{name: name, fn: func(in *interp, args []any, kw *Map, callEnv *env) (any, error) {
		parent := callEnv
		if fixed != nil {
			parent = fixed
		}
		if in.depth >= maxDepth {
			return nil, errors.New("maximum macro recursion depth exceeded")
		}
		in.depth++
		defer func() { in.depth-- }()
		scope := newEnv(parent)
		kwLeft := NewMap()
		if kw != nil {
			for _, k := range kw.Keys {
				kwLeft.Set(k, kw.Values[k])
			}
		}
		type pending struct {
			name string
			def  node
		}
		var defaults []pending
		for i, p := range params {
			pname, def := "", node(nil)
			switch x := p.(type) {
			case *identNode:
				pname = x.name
			case *kwargNode:
				pname, def = x.key, x.value
			}
			var v any = undefined{}
			have := false
			if i < len(args) {
				v, have = args[i], true
			} else if kv, ok := kwLeft.Get(pname); ok {
				v, have = kv, true
				kwLeft = without(kwLeft, pname)
			}
			if !have && def != nil {
				defaults = append(defaults, pending{pname, def})
			}
			scope.vars[pname] = v
		}
		if special["kwargs"] {
			scope.vars["kwargs"] = kwLeft
		} else if kwLeft.Len() > 0 {
			return nil, errors.New("macro '" + name + "' takes no keyword argument '" + kwLeft.Keys[0] + "'")
		}
		if special["varargs"] {
			var rest []any
			if len(args) > len(params) {
				rest = append(rest, args[len(params):]...)
			}
			scope.vars["varargs"] = newList(rest)
		} else if len(args) > len(params) {
			return nil, errors.New(sprintf("macro '%s' takes not more than %d argument(s)", name, len(params)))
		}
		for _, d := range defaults {
			v, err := in.eval(d.def, scope)
			if err != nil {
				return nil, err
			}
			scope.vars[d.name] = v
		}
		return in.block(body, scope)
	}}
}

func without(m *Map, key string) *Map {
	out := NewMap()
	for _, k := range m.Keys {
		if k != key {
			out.Set(k, m.Values[k])
		}
	}
	return out
}

func (in *interp) execCallBlock(s *callBlockNode, e *env) (any, error) {
	caller := in.makeMacro("caller", s.callerParams, s.body, e)
	args, kw, err := in.evalArgs(s.call.args, e)
	if err != nil {
		return nil, err
	}
	fn, err := in.eval(s.call.callee, e)
	if err != nil {
		return nil, err
	}
	c, ok := fn.(*callable)
	if !ok {
		return nil, in.errAt(s, "Cannot call something that is not a function: got %s", typeName(fn))
	}
	callEnv := newEnv(e)
	callEnv.vars["caller"] = caller
	v, err := c.fn(in, args, kw, callEnv)
	if err != nil {
		return nil, in.locate(s, err)
	}
	return v, nil
}

// specialArgs reports whether a macro body reads kwargs / varargs (not declared as parameters).
func specialArgs(params []node, body []node) map[string]bool {
	declared := map[string]bool{}
	for _, p := range params {
		switch x := p.(type) {
		case *identNode:
			declared[x.name] = true
		case *kwargNode:
			declared[x.key] = true
		}
	}
	found := map[string]bool{}
	var visit func(n node)
	visit = func(n node) {
		if n == nil {
			return
		}
		switch x := n.(type) {
		case *identNode:
			if (x.name == "kwargs" || x.name == "varargs") && !declared[x.name] {
				found[x.name] = true
			}
		case *ifNode:
			visit(x.test)
			visitAll(x.body, visit)
			visitAll(x.alt, visit)
		case *forNode:
			visit(x.iter)
			visitAll(x.body, visit)
			visitAll(x.alt, visit)
		case *setNode:
			visit(x.value)
			visitAll(x.body, visit)
		case *callBlockNode:
			visit(x.call)
		case *filterBlockNode:
			visitAll(x.filter.args, visit)
			visitAll(x.body, visit)
		case *listNode:
			visitAll(x.items, visit)
		case *tupleNode:
			visitAll(x.items, visit)
		case *dictNode:
			visitAll(x.keys, visit)
			visitAll(x.vals, visit)
		case *memberNode:
			visit(x.obj)
			if x.computed {
				visit(x.prop)
			}
		case *sliceNode:
			visit(x.start)
			visit(x.stop)
			visit(x.step)
		case *callNode:
			visit(x.callee)
			visitAll(x.args, visit)
		case *kwargNode:
			visit(x.value)
		case *spreadNode:
			visit(x.x)
		case *kwSpreadNode:
			visit(x.x)
		case *unaryNode:
			visit(x.x)
		case *binaryNode:
			visit(x.l)
			visit(x.r)
		case *filterNode:
			visit(x.x)
			visitAll(x.args, visit)
		case *testNode:
			visit(x.x)
			visitAll(x.args, visit)
		case *selectNode:
			visit(x.lhs)
			visit(x.test)
		case *ternaryNode:
			visit(x.cond)
			visit(x.a)
			visit(x.b)
		}
	}
	visitAll(body, visit)
	return found
}

func visitAll(ns []node, f func(node)) {
	for _, n := range ns {
		f(n)
	}
}
