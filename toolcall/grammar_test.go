// Grammar tests: the language of each format's call grammar, checked by a small recognizer
// (and by the real compiler once it is merged).
package toolcall

import (
	"regexp"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/grammar"
)

// ends returns the positions where e, started at pos in s, can end (a plain CFG recognizer
// for the small grammars here; no left recursion).
func ends(g *grammar.IR, e *grammar.Expr, s string, pos int) map[int]bool {
	out := map[int]bool{}
	switch e.Kind {
	case grammar.KindLiteral:
		if strings.HasPrefix(s[pos:], e.Text) {
			out[pos+len(e.Text)] = true
		}
	case grammar.KindRegex:
		re := regexp.MustCompile(`^(?:` + e.Text + `)$`)
		for j := pos; j <= len(s); j++ {
			if re.MatchString(s[pos:j]) {
				out[j] = true
			}
		}
	case grammar.KindRef:
		return ends(g, g.Rules[e.Text], s, pos)
	case grammar.KindAlt:
		for _, sub := range e.Subs {
			for j := range ends(g, sub, s, pos) {
				out[j] = true
			}
		}
	case grammar.KindSeq:
		cur := map[int]bool{pos: true}
		for _, sub := range e.Subs {
			next := map[int]bool{}
			for p := range cur {
				for j := range ends(g, sub, s, p) {
					next[j] = true
				}
			}
			cur = next
		}
		return cur
	case grammar.KindRepeat:
		cur := map[int]bool{pos: true}
		if e.Min == 0 {
			out[pos] = true
		}
		for n := 1; len(cur) > 0 && (e.Max < 0 || n <= e.Max) && n <= len(s)+1; n++ {
			next := map[int]bool{}
			for p := range cur {
				for j := range ends(g, e.Subs[0], s, p) {
					if j > p || n <= e.Min {
						next[j] = true
					}
				}
			}
			if n >= e.Min {
				for j := range next {
					out[j] = true
				}
			}
			cur = next
		}
	}
	return out
}

func inLanguage(g *grammar.IR, s string) bool { return ends(g, g.Rules[g.Start], s, 0)[len(s)] }

// args: a small hand-written arguments grammar, {"city":"<letters>"} or {}.
func argsIR() *grammar.IR {
	return &grammar.IR{Start: "root", Rules: map[string]*grammar.Expr{
		"root": grammar.Alt(grammar.Lit("{}"), grammar.Seq(grammar.Lit(`{"city":`), grammar.Ref("str"), grammar.Lit("}"))),
		"str":  grammar.Re(`"[A-Za-z]{1,8}"`),
	}}
}

func TestGrammarLanguage(t *testing.T) {
	tools := []Tool{{Name: "get_weather", Params: argsIR()}, {Name: "noop", Params: argsIR()}}
	for _, tc := range []struct {
		format   string
		multiple bool
		yes, no  []string
	}{
		{"hermes", false,
			[]string{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>",
				"<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>"},
			[]string{"", "hello", "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>",
				"<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>",
				"<tool_call>\n{\"name\": \"noop\", \"arguments\": {\"city\":1}}\n</tool_call>"}},
		{"", true,
			[]string{"<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"X\"}}\n</tool_call>"},
			[]string{"<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>\n"}},
		{"llama3_json", true,
			[]string{`{"name": "noop", "parameters": {}}`, `{"name": "noop", "parameters": {}}; {"name": "get_weather", "parameters": {"city":"Oslo"}}`},
			[]string{`{"name": "noop", "arguments": {}}`, `{"name": "noop", "parameters": {}};`}},
		{"mistral", true,
			[]string{`[TOOL_CALLS][{"name": "noop", "arguments": {}}, {"name": "noop", "arguments": {}}]`},
			[]string{`[TOOL_CALLS][]`, `[{"name": "noop", "arguments": {}}]`}},
	} {
		g, err := Grammar(tc.format, tools, tc.multiple)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := Lookup(map[string]string{"": "hermes"}[tc.format] + tc.format)
		for _, s := range tc.yes {
			if !inLanguage(g, s) {
				t.Errorf("%s: %q not in the language:\n%s", tc.format, s, g)
			}
			// what the grammar allows, the parser reads as calls with no content
			content, calls := p.Parse(s)
			if strings.TrimSpace(content) != "" || len(calls) == 0 {
				t.Errorf("%s: %q parses as %q %v", tc.format, s, content, calls)
			}
		}
		for _, s := range tc.no {
			if inLanguage(g, s) {
				t.Errorf("%s: %q is in the language", tc.format, s)
			}
		}
	}
	if _, err := Grammar("pythonic", tools, false); err == nil {
		t.Error("unknown format accepted")
	}
	if _, err := Grammar("hermes", nil, false); err == nil {
		t.Error("no tools accepted")
	}
}

func TestMergeKeepsSourceIntact(t *testing.T) {
	src := argsIR()
	before := src.String()
	dst := &grammar.IR{Start: "root", Rules: map[string]*grammar.Expr{"str": grammar.Lit("mine")}}
	start := Merge(dst, src, "p_")
	dst.Rules["root"] = grammar.Ref(start)
	if src.String() != before || dst.Rules["str"].Text != "mine" || dst.Validate() != nil {
		t.Fatalf("merge:\n%s\nsource now:\n%s", dst, src)
	}
	if !inLanguage(dst, `{"city":"Rome"}`) {
		t.Fatal("merged grammar lost its language")
	}
}

// With the real compiler (once merged): a matcher accepts a call byte by byte and ends there.
func TestGrammarCompiles(t *testing.T) {
	g, err := Grammar("hermes", []Tool{{Name: "noop", Params: argsIR()}}, false)
	if err != nil {
		t.Fatal(err)
	}
	cg, err := grammar.Compile(g, grammar.Limits{})
	if err != nil && strings.Contains(err.Error(), "not implemented") {
		t.Skip("grammar.Compile is not implemented yet on this branch")
	}
	if err != nil {
		t.Fatal(err)
	}
	m := cg.NewMatcher(grammar.NewVocab([][]byte{[]byte("a")}, nil))
	if err := m.AcceptBytes([]byte("<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>")); err != nil || !m.CanEnd() {
		t.Fatalf("accept: %v, can end %v", err, m.CanEnd())
	}
	m2 := cg.NewMatcher(grammar.NewVocab([][]byte{[]byte("a")}, nil))
	if err := m2.AcceptBytes([]byte("Sure")); err == nil {
		t.Fatal("content accepted where a call must come")
	}
}

func TestParamsIR(t *testing.T) {
	for _, bad := range []string{`[1]`, `{"type":`, `"object"`} {
		if _, err := ParamsIR([]byte(bad)); err == nil || strings.Contains(err.Error(), "not implemented") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	_, err := ParamsIR([]byte(`{"type": "object", "properties": {"a": {"type": "integer"}}}`))
	if err != nil && strings.Contains(err.Error(), "not implemented") {
		t.Skip("grammar.JSONSchema is not implemented yet on this branch")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParamsIR([]byte(`{"type": "nonsense"}`)); err == nil {
		t.Error("a schema with an unknown type compiled")
	}
}
