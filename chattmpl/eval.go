// This file implements rendering of statements: scopes, text/output, if, for (loop variables,
// else, inline filter, break/continue), set (incl. namespace attributes and block set), macros
// and call/filter blocks.
package chattmpl

import (
	"errors"
	"strings"
	"time"
)

type env struct {
	vars   map[string]any
	parent *env
}

func newEnv(parent *env) *env { return &env{vars: map[string]any{}, parent: parent} }

func (e *env) lookup(name string) any {
	for s := e; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v
		}
	}
	return undefined{}
}

type interp struct {
	src   string
	now   func() time.Time
	depth int
}

var (
	errBreak    = errors.New("break outside loop")
	errContinue = errors.New("continue outside loop")
)

// maxDepth bounds macro recursion so runaway templates fail instead of exhausting the stack.
const maxDepth = 200

// errAt wraps a render error with the line:col of n unless it already has a position.
func (in *interp) errAt(n node, format string, args ...any) error {
	line, col := lineCol(in.src, n.position())
	return &Error{Line: line, Col: col, Msg: sprintf(format, args...)}
}

func (in *interp) locate(n node, err error) error {
	var e *Error
	if errors.As(err, &e) || errors.Is(err, errBreak) || errors.Is(err, errContinue) {
		return err
	}
	var re *RaiseError
	if errors.As(err, &re) {
		return err
	}
	line, col := lineCol(in.src, n.position())
	return &Error{Line: line, Col: col, Msg: err.Error()}
}

func (in *interp) block(nodes []node, e *env) (string, error) {
	var b strings.Builder
	for _, n := range nodes {
		v, err := in.exec(n, e)
		if err != nil {
			return "", err
		}
		switch v.(type) {
		case nil, undefined:
		default:
			b.WriteString(toString(v))
		}
	}
	return b.String(), nil
}

// exec runs a statement or evaluates an expression statement ({{ }}), returning what it prints.
func (in *interp) exec(n node, e *env) (any, error) {
	switch s := n.(type) {
	case *textNode:
		return s.text, nil
	case *commentNode:
		return nil, nil
	case *ifNode:
		t, err := in.eval(s.test, e)
		if err != nil {
			return nil, err
		}
		if truthy(t) {
			return in.block(s.body, e)
		}
		return in.block(s.alt, e)
	case *forNode:
		return in.execFor(s, e)
	case *setNode:
		return nil, in.execSet(s, e)
	case *macroNode:
		e.vars[s.name] = in.makeMacro(s.name, s.params, s.body, nil)
		return nil, nil
	case *callBlockNode:
		return in.execCallBlock(s, e)
	case *filterBlockNode:
		body, err := in.block(s.body, e)
		if err != nil {
			return nil, err
		}
		return in.applyFilter(s.filter, body, e)
	case *breakNode:
		return nil, errBreak
	case *continueNode:
		return nil, errContinue
	}
	return in.eval(n, e)
}

func (in *interp) bindTarget(target node, v any, e *env) error {
	switch t := target.(type) {
	case *identNode:
		e.vars[t.name] = v
		return nil
	case *tupleNode:
		l, ok := v.(*list)
		if !ok {
			return in.errAt(target, "Cannot unpack non-iterable type: %s", typeName(v))
		}
		if len(l.items) != len(t.items) {
			word := "many"
			if len(t.items) > len(l.items) {
				word = "few"
			}
			return in.errAt(target, "Too %s items to unpack", word)
		}
		for i, it := range t.items {
			id, ok := it.(*identNode)
			if !ok {
				return in.errAt(it, "Cannot unpack to non-identifier")
			}
			e.vars[id.name] = l.items[i]
		}
		return nil
	}
	return in.errAt(target, "invalid assignment target")
}

func (in *interp) execSet(s *setNode, e *env) error {
	var rhs any
	var err error
	if s.value != nil {
		rhs, err = in.eval(s.value, e)
	} else {
		rhs, err = in.block(s.body, e)
	}
	if err != nil {
		return err
	}
	if m, ok := s.target.(*memberNode); ok {
		obj, err := in.eval(m.obj, e)
		if err != nil {
			return err
		}
		ns, ok := obj.(*namespace)
		if !ok {
			return in.errAt(s, "cannot assign attribute on non-namespace object")
		}
		id, ok := m.prop.(*identNode)
		if !ok {
			return in.errAt(s, "Cannot assign to member with non-identifier property")
		}
		ns.m.Set(id.name, rhs)
		return nil
	}
	return in.bindTarget(s.target, rhs, e)
}

func (in *interp) execFor(s *forNode, outer *env) (any, error) {
	scope := newEnv(outer)
	iterNode, test := s.iter, node(nil)
	if sel, ok := s.iter.(*selectNode); ok {
		iterNode, test = sel.lhs, sel.test
	}
	it, err := in.eval(iterNode, scope)
	if err != nil {
		return nil, err
	}
	var all []any
	switch x := it.(type) {
	case *list:
		all = x.items
	case *Map:
		for _, k := range x.Keys {
			all = append(all, k)
		}
	default:
		return nil, in.errAt(s.iter, "Expected iterable or object type in for loop: got %s", typeName(it))
	}
	var items []any
	for _, cur := range all {
		if test != nil {
			ls := newEnv(scope)
			if err := in.bindTarget(s.target, cur, ls); err != nil {
				return nil, err
			}
			t, err := in.eval(test, ls)
			if err != nil {
				return nil, err
			}
			if !truthy(t) {
				continue
			}
		}
		items = append(items, cur)
	}
	var b strings.Builder
	iterated := false
	for i, cur := range items {
		loop := NewMap()
		loop.Set("index", int64(i+1))
		loop.Set("index0", int64(i))
		loop.Set("revindex", int64(len(items)-i))
		loop.Set("revindex0", int64(len(items)-i-1))
		loop.Set("first", i == 0)
		loop.Set("last", i == len(items)-1)
		loop.Set("length", int64(len(items)))
		var prev, next any = undefined{}, undefined{}
		if i > 0 {
			prev = items[i-1]
		}
		if i < len(items)-1 {
			next = items[i+1]
		}
		loop.Set("previtem", prev)
		loop.Set("nextitem", next)
		scope.vars["loop"] = loop
		if err := in.bindTarget(s.target, cur, scope); err != nil {
			return nil, err
		}
		out, err := in.block(s.body, scope)
		if errors.Is(err, errContinue) {
			continue
		}
		if errors.Is(err, errBreak) {
			break
		}
		if err != nil {
			return nil, err
		}
		b.WriteString(out)
		iterated = true
	}
	if !iterated {
		out, err := in.block(s.alt, scope)
		if err != nil {
			return nil, err
		}
		b.WriteString(out)
	}
	return b.String(), nil
}
