// Golden tests: every template in testdata/templates over every conversation in
// testdata/cases.json must render byte-identically to @huggingface/jinja (testdata/golden,
// produced by testdata/gen/gen.cjs), and must fail where the reference failed.
package chattmpl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

// fixedTime is the clock frozen in gen.cjs (2025-03-09T14:30:00Z).
var fixedTime = time.Date(2025, 3, 9, 14, 30, 0, 0, time.UTC)

type tmplInfo struct {
	Name, File, Bos, Eos string
}

func loadCases(t *testing.T) []*Map {
	t.Helper()
	b, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := DecodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []*Map
	for _, c := range v.([]any) {
		out = append(out, c.(*Map))
	}
	return out
}

func caseOptions(c *Map, ti tmplInfo) ([]any, Options) {
	msgs, _ := c.Get("messages")
	opts := Options{BOSToken: ti.Bos, EOSToken: ti.Eos, Now: func() time.Time { return fixedTime }}
	if g, ok := c.Get("add_generation_prompt"); ok {
		opts.AddGenerationPrompt = g == true
	}
	if tools, ok := c.Get("tools"); ok {
		opts.Tools = tools.([]any)
	}
	if extra, ok := c.Get("extra"); ok {
		opts.Extra = map[string]any{}
		for k, v := range extra.(*Map).Values {
			opts.Extra[k] = v
		}
	}
	return msgs.([]any), opts
}

func TestGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/templates/templates.json")
	if err != nil {
		t.Fatal(err)
	}
	var tmpls []tmplInfo
	if err := json.Unmarshal(b, &tmpls); err != nil {
		t.Fatal(err)
	}
	cases := loadCases(t)
	n := 0
	for _, ti := range tmpls {
		src, err := os.ReadFile(filepath.Join("testdata/templates", ti.File))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			name, _ := c.Get("name")
			t.Run(ti.Name+"/"+name.(string), func(t *testing.T) {
				base := filepath.Join("testdata/golden", ti.Name, name.(string))
				msgs, opts := caseOptions(c, ti)
				got, err := Apply(string(src), msgs, opts)
				if want, rerr := os.ReadFile(base + ".err"); rerr == nil {
					if err == nil {
						t.Fatalf("reference failed with %q, but we rendered:\n%s", want, got)
					}
					var re *RaiseError
					if errors.As(err, &re) && re.Msg != string(want) {
						t.Fatalf("raise_exception message %q, reference %q", re.Msg, want)
					}
					return
				}
				want, rerr := os.ReadFile(base + ".txt")
				if rerr != nil {
					t.Fatalf("no golden for %s: %v", base, rerr)
				}
				if err != nil {
					t.Fatalf("render error: %v", err)
				}
				if got != string(want) {
					t.Fatalf("mismatch\n--- got ---\n%q\n--- want ---\n%q", got, want)
				}
			})
			n++
		}
	}
	if n < 200 {
		t.Fatalf("only %d golden cases ran", n)
	}
}

// TestSharedQwen2Template renders the Qwen2 template straight from testdata and checks it
// equals the copy the goldens were made from.
func TestSharedQwen2Template(t *testing.T) {
	p := fixture.Path(t, "models", "qwen2-tokenizer", "tokenizer_config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := DecodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := cfg.(*Map).Get("chat_template")
	copyb, err := os.ReadFile("testdata/templates/qwen2.jinja")
	if err != nil {
		t.Fatal(err)
	}
	if tmpl != string(copyb) {
		t.Fatal("testdata/templates/qwen2.jinja differs from the shared tokenizer_config.json")
	}
	msgs := []any{map[string]any{"role": "user", "content": "Hello, how are you?"}}
	got, err := Apply(tmpl.(string), msgs, Options{AddGenerationPrompt: true, EOSToken: "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/golden/qwen2/single_user.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("got %q want %q", got, want)
	}
}
