// Unit tests for behaviour not covered by the goldens: error positions, DecodeJSON, Go value
// conversion, raise_exception errors, extensions beyond the reference (select/reject, tests
// with arguments) and robustness limits.
package chattmpl

import (
	"errors"
	"strings"
	"testing"
)

func render(t *testing.T, src string, vars map[string]any) string {
	t.Helper()
	tm, err := Parse(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	out, err := tm.Render(vars)
	if err != nil {
		t.Fatalf("render %q: %v", src, err)
	}
	return out
}

func TestParseErrorPositions(t *testing.T) {
	cases := []struct{ src, pos, msg string }{
		{"line1\n{% frobnicate %}", "2:4:", "unknown statement type: frobnicate"},
		{"ab\ncd {{ 'x\\q' }}", "2:10:", "Unexpected escaped character: q"},
		{"{% if x %}\nno end", "", "end of template"},
		{"é {{ 1 + }}", "1:10:", "unexpected token"},
		{"{{ x | }}", "1:8:", "unexpected token"},
		{"{# never closed", "1:1:", "Missing end of comment tag"},
		{"{{ 'unterminated }}", "", "Unexpected end of input"},
		{"{{ a.'s' }}", "1:6:", "expected identifier or integer"},
		{"{{ f(a=1, 2) }}", "1:11:", "positional arguments must come before keyword arguments"},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error", c.src)
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error %T, want *Error", c.src, err)
		}
		if !strings.HasPrefix(err.Error(), c.pos) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Parse(%q) = %q, want prefix %q containing %q", c.src, err, c.pos, c.msg)
		}
	}
}

func TestRenderErrorPositions(t *testing.T) {
	tm, err := Parse("ok\n  {{ 'a' + missing }}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tm.Render(nil)
	if err == nil || !strings.HasPrefix(err.Error(), "2:10:") {
		t.Fatalf("got %v, want 2:10: position", err)
	}
}

func TestRaiseException(t *testing.T) {
	tm, err := Parse("a{% if x > 1 %}{{ raise_exception('x too big: ' ~ x) }}{% endif %}b")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tm.Render(map[string]any{"x": 1}); err != nil || out != "ab" {
		t.Fatalf("x=1: %q %v", out, err)
	}
	_, err = tm.Render(map[string]any{"x": 5})
	var re *RaiseError
	if !errors.As(err, &re) || re.Msg != "x too big: 5" {
		t.Fatalf("got %v, want RaiseError with message", err)
	}
}

func TestDecodeJSON(t *testing.T) {
	v, err := DecodeJSON([]byte(`{"z": 1, "a": [2.5, 3.0, -4, 1e2, null, true, "s"], "m": {"y": {}, "b": []}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*Map)
	if strings.Join(m.Keys, ",") != "z,a,m" {
		t.Fatalf("key order %v", m.Keys)
	}
	a := m.Values["a"].([]any)
	want := []any{2.5, int64(3), int64(-4), int64(100), nil, true, "s"}
	for i := range want {
		if a[i] != want[i] {
			t.Fatalf("a[%d] = %#v, want %#v", i, a[i], want[i])
		}
	}
	if inner := m.Values["m"].(*Map); strings.Join(inner.Keys, ",") != "y,b" {
		t.Fatalf("inner order %v", inner.Keys)
	}
	for _, bad := range []string{`{"a":}`, `[1,`, `{} {}`, ``} {
		if _, err := DecodeJSON([]byte(bad)); err == nil {
			t.Errorf("DecodeJSON(%q) succeeded", bad)
		}
	}
}

func TestGoValues(t *testing.T) {
	type msg struct{ Role string }
	vars := map[string]any{
		"m":  map[string]any{"b": 1, "a": []string{"x", "y"}},
		"n":  int32(7),
		"f":  float32(0.5),
		"fn": func(args ...any) (any, error) { return len(args), nil },
	}
	got := render(t, "{{ m | tojson }}|{{ n + 1 }}|{{ f }}|{{ fn(1, 2, 3) }}", vars)
	if want := `{"a": ["x", "y"], "b": 1}|8|0.5|3`; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if _, err := (&Template{}).Render(map[string]any{"bad": msg{"x"}}); err == nil {
		t.Fatal("struct value accepted; want a clear error")
	}
}

func TestExtensions(t *testing.T) {
	// Features @huggingface/jinja lacks, implemented with Jinja's meaning.
	cases := map[string]string{
		"{{ [1, 2, 3, 4] | select('odd') | join(',') }}":                       "1,3",
		"{{ ['a', 'code', 'b'] | reject('equalto', 'code') | join }}":          "ab",
		"{{ ['a', 'B'] | map('upper') | join }}":                               "AB",
		"{{ [3, 1, 2] | min }}{{ [3, 1, 2] | max }}{{ [3, 1, 2] | sum }}":      "136",
		"{{ 'one two  three' | wordcount }}":                                   "3",
		"{{ [1, 2, 3] | batch(2) | tojson }}":                                  "[[1, 2], [3]]",
		"{{ 2.567 | round(2) }}":                                               "2.57",
		"{{ 6 is divisibleby(3) }}{{ 'x' is equalto('x') }}{{ 1.5 is float }}": "truetruetrue",
		"{{ nope | d('dflt') }}":                                               "dflt",
		"{{ 'abc' | count }}":                                                  "3",
	}
	for src, want := range cases {
		if got := render(t, src, nil); got != want {
			t.Errorf("%s = %q, want %q", src, got, want)
		}
	}
}

func TestMacroRecursionLimit(t *testing.T) {
	tm, err := Parse("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Render(nil); err == nil || !strings.Contains(err.Error(), "recursion") {
		t.Fatalf("got %v, want recursion error", err)
	}
}

func TestApplyToolsUndefinedWhenNil(t *testing.T) {
	src := "{{ tools is defined }}{{ bos_token is defined }}{{ enable_thinking }}"
	got, err := Apply(src, nil, Options{Extra: map[string]any{"enable_thinking": false}})
	if err != nil || got != "falsefalsefalse" {
		t.Fatalf("got %q %v", got, err)
	}
	got, err = Apply(src, nil, Options{Tools: []any{}, BOSToken: "<s>"})
	if err != nil || got != "truetrue" {
		t.Fatalf("got %q %v", got, err)
	}
}
