// Snippet goldens: small one-feature templates (testdata/snippets.json) must render exactly as
// @huggingface/jinja did (testdata/golden/snippets.json), or fail where it failed.
package chattmpl

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestSnippets(t *testing.T) {
	b, err := os.ReadFile("testdata/snippets.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := DecodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := os.ReadFile("testdata/golden/snippets.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden map[string]struct {
		Out *string `json:"out"`
		Err *string `json:"err"`
	}
	if err := json.Unmarshal(gb, &golden); err != nil {
		t.Fatal(err)
	}
	snippets := v.([]any)
	if len(snippets) < 30 {
		t.Fatalf("only %d snippets", len(snippets))
	}
	for _, s := range snippets {
		m := s.(*Map)
		name, _ := m.Get("name")
		src, _ := m.Get("src")
		t.Run(name.(string), func(t *testing.T) {
			g, ok := golden[name.(string)]
			if !ok {
				t.Fatal("no golden; rerun testdata/gen/gen.cjs")
			}
			vars := map[string]any{}
			if vv, ok := m.Get("vars"); ok {
				for k, x := range vv.(*Map).Values {
					vars[k] = x
				}
			}
			var got string
			tmpl, err := Parse(src.(string))
			if err == nil {
				got, err = tmpl.RenderAt(vars, func() time.Time { return fixedTime })
			}
			if g.Err != nil {
				if err == nil {
					t.Fatalf("reference failed (%s) but we rendered %q", *g.Err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v, want %q", err, *g.Out)
			}
			if got != *g.Out {
				t.Fatalf("got  %q\nwant %q", got, *g.Out)
			}
		})
	}
}
