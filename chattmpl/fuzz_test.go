// FuzzParse: arbitrary template source must never panic in Parse or Render.
package chattmpl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/templates/*.jinja")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{"{{ x }}", "{% for a, b in x.items() if a %}{{ loop.index }}{% else %}e{% endfor %}",
		"{% set ns = namespace(a=1) %}{% set ns.a = ns.a ** 2 %}{{ ns.a }}", "{{ 'a'[::-1] ~ [1][0:] | tojson(indent=2) }}",
		"{% macro m(a, b=2) %}{{ caller() }}{% endmacro %}{% call m(1) %}x{% endcall %}", "{#- c -#} {%- generation -%}"} {
		f.Add(s)
	}
	msgs := []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "<think>a</think>b"}}
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := Parse(src)
		if err != nil {
			return
		}
		_, err = tm.RenderAt(map[string]any{"messages": msgs, "x": map[string]any{"k": 1}, "add_generation_prompt": true},
			func() time.Time { return fixedTime })
		if err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("render panicked: %v", err)
		}
	})
}
