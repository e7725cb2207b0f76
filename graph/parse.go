// This file reads the text form that text.go prints. Errors give the line and, on a node's
// line, the node; the parsed graph is checked with Verify before it is returned, so a type
// that disagrees with its op, an unknown op or an undefined value is an error naming the node.
package graph

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// MaxParseLines bounds the text Parse reads (a graph of the largest models has a few thousand).
const MaxParseLines = 1 << 20

// Parse reads a graph's text form.
func Parse(text string) (*Graph, error) {
	p := &parser{vals: map[string]*Value{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	state := 0 // 0: before "graph", 1: inside, 2: after "}"
	for sc.Scan() {
		p.line++
		if p.line > MaxParseLines {
			return nil, fmt.Errorf("graph: more than %d lines", MaxParseLines)
		}
		line := strings.TrimSpace(stripComment(sc.Text()))
		if line == "" {
			continue
		}
		var err error
		switch state {
		case 0:
			rest, ok := strings.CutPrefix(line, "graph ")
			name, ok2 := strings.CutSuffix(strings.TrimSpace(rest), "{")
			name = strings.TrimSpace(name)
			if !ok || !ok2 || !isIdent(name) {
				return nil, p.errorf("want `graph NAME {`, got %q", line)
			}
			p.g.Name = name
			state = 1
		case 1:
			if line == "}" {
				state = 2
				continue
			}
			err = p.statement(line)
		default:
			return nil, p.errorf("text after the closing }")
		}
		if err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	if state != 2 {
		return nil, fmt.Errorf("graph: missing closing }")
	}
	if err := Verify(&p.g); err != nil {
		return nil, err
	}
	return &p.g, nil
}

type parser struct {
	g    Graph
	vals map[string]*Value
	line int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("graph: line %d: %s", p.line, fmt.Sprintf(format, args...))
}

func (p *parser) statement(line string) error {
	switch {
	case strings.HasPrefix(line, "input "), strings.HasPrefix(line, "weight "):
		kw, rest, _ := strings.Cut(line, " ")
		v, err := p.decl(rest)
		if err != nil {
			return p.errorf("%s: %v", kw, err)
		}
		if kw == "input" {
			v.Kind = KindInput
			p.g.Inputs = append(p.g.Inputs, v)
		} else {
			v.Kind = KindWeight
			p.g.Weights = append(p.g.Weights, v)
		}
		return p.define(v)
	case strings.HasPrefix(line, "output "):
		for _, s := range splitTop(strings.TrimPrefix(line, "output ")) {
			v, err := p.ref(s)
			if err != nil {
				return p.errorf("output: %v", err)
			}
			p.g.Outputs = append(p.g.Outputs, v)
		}
		return nil
	}
	return p.node(line)
}

// decl reads "%name: type".
func (p *parser) decl(s string) (*Value, error) {
	name, typ, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || !strings.HasPrefix(name, "%") || !isIdent(name[1:]) {
		return nil, fmt.Errorf("want %%name: type, got %q", s)
	}
	t, err := parseType(strings.TrimSpace(typ))
	if err != nil {
		return nil, err
	}
	return &Value{Name: name[1:], Type: t}, nil
}

func (p *parser) define(v *Value) error {
	if p.vals[v.Name] != nil {
		return p.errorf("%s defined twice", v)
	}
	p.vals[v.Name] = v
	return nil
}

// ref reads a use of a value, "%name".
func (p *parser) ref(s string) (*Value, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "%") {
		return nil, fmt.Errorf("want %%name, got %q", s)
	}
	v := p.vals[s[1:]]
	if v == nil {
		return nil, fmt.Errorf("%s is not defined", s)
	}
	return v, nil
}

// node reads "%a: T, %b: T = op(%x, %y) {k=v, ...}".
func (p *parser) node(line string) error {
	lhs, rhs, ok := cutTop(line, '=')
	if !ok {
		return p.errorf("want input, weight, output or `%%result: type = op(args)`, got %q", line)
	}
	n := &Node{}
	for i, d := range splitTop(lhs) {
		v, err := p.decl(d)
		if err != nil {
			return p.errorf("result %d: %v", i, err)
		}
		v.Kind, v.Def, v.Index = KindResult, n, i
		n.Outs = append(n.Outs, v)
	}
	name := n.Name()
	rhs = strings.TrimSpace(rhs)
	open := strings.IndexByte(rhs, '(')
	if open <= 0 {
		return p.errorf("node %s: want op(args), got %q", name, rhs)
	}
	n.Op = strings.TrimSpace(rhs[:open])
	if Op(n.Op) == nil {
		return p.errorf("node %s: unknown op %q", name, n.Op)
	}
	closeAt := strings.IndexByte(rhs, ')')
	if closeAt < open {
		return p.errorf("node %s: missing )", name)
	}
	if args := strings.TrimSpace(rhs[open+1 : closeAt]); args != "" {
		for _, a := range splitTop(args) {
			v, err := p.ref(a)
			if err != nil {
				return p.errorf("node %s: %v", name, err)
			}
			n.Args = append(n.Args, v)
		}
	}
	rest := strings.TrimSpace(rhs[closeAt+1:])
	if rest != "" {
		body, ok := strings.CutPrefix(rest, "{")
		body, ok2 := strings.CutSuffix(body, "}")
		if !ok || !ok2 {
			return p.errorf("node %s: want {attributes} after the arguments, got %q", name, rest)
		}
		attrs, err := parseAttrs(body)
		if err != nil {
			return p.errorf("node %s: %v", name, err)
		}
		n.Attrs = attrs
	}
	for _, o := range n.Outs {
		if err := p.define(o); err != nil {
			return err
		}
	}
	p.g.Nodes = append(p.g.Nodes, n)
	return nil
}

func parseAttrs(s string) (Attrs, error) {
	a := Attrs{}
	if strings.TrimSpace(s) == "" {
		return a, nil
	}
	for _, kv := range splitTop(s) {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || !isIdent(k) {
			return nil, fmt.Errorf("attribute %q: want name=value", kv)
		}
		if _, dup := a[k]; dup {
			return nil, fmt.Errorf("attribute %s given twice", k)
		}
		val, err := parseAttr(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %v", k, err)
		}
		a[k] = val
	}
	return a, nil
}

func parseAttr(v string) (Attr, error) {
	switch {
	case strings.HasPrefix(v, `"`):
		s, err := strconv.Unquote(v)
		if err != nil {
			return Attr{}, fmt.Errorf("bad string %s", v)
		}
		return Str(s), nil
	case strings.HasPrefix(v, "["):
		body, ok := strings.CutSuffix(v[1:], "]")
		if !ok {
			return Attr{}, fmt.Errorf("bad list %s", v)
		}
		var xs []int64
		if strings.TrimSpace(body) != "" {
			for _, e := range strings.Split(body, ",") {
				x, err := strconv.ParseInt(strings.TrimSpace(e), 10, 64)
				if err != nil {
					return Attr{}, fmt.Errorf("bad list element %q", e)
				}
				xs = append(xs, x)
			}
		}
		return IntList(xs...), nil
	}
	if i, err := strconv.ParseInt(v, 10, 64); err == nil {
		return Int(i), nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return Attr{}, fmt.Errorf("bad value %q", v)
	}
	return Float(f), nil
}

// topLevel calls at(i) for each index i of s where sep stands outside brackets, braces,
// parentheses and quotes, until at returns false.
func topLevel(s string, sep byte, at func(i int) bool) {
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			if c == '\\' {
				i++
			} else if c == '"' {
				quoted = false
			}
		case c == '"':
			quoted = true
		case c == '[' || c == '(' || c == '{':
			depth++
		case c == ']' || c == ')' || c == '}':
			depth--
		case c == sep && depth == 0:
			if !at(i) {
				return
			}
		}
	}
}

// splitTop splits s at commas outside brackets, braces, parentheses and quotes.
func splitTop(s string) []string {
	var out []string
	start := 0
	topLevel(s, ',', func(i int) bool {
		out = append(out, strings.TrimSpace(s[start:i]))
		start = i + 1
		return true
	})
	return append(out, strings.TrimSpace(s[start:]))
}

// cutTop cuts s at the first sep outside brackets and quotes.
func cutTop(s string, sep byte) (before, after string, found bool) {
	before = s
	topLevel(s, sep, func(i int) bool {
		before, after, found = s[:i], s[i+1:], true
		return false
	})
	return before, after, found
}

// stripComment drops a '#' comment outside quotes.
func stripComment(s string) string {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == '#' && !quoted:
			return s[:i]
		}
	}
	return s
}
