// The bulk check of issue 16's acceptance: 1,000 constrained generations over the schemas of
// schemas_test.go, sampled at temperature 1 from random-weight models (nearly uniform logits:
// the hardest case for a grammar, which alone decides what is written), each output validated
// by an independent JSON Schema validator. Finish reasons are counted: a "length" finish is a
// failure too, since every schema's language is finite and maxTokens exceeds its longest text.

package structcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/grammar"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/sample"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// count is the number of generations: n, or LLMCLOUD_STRUCT_N when set.
func count(n int) int {
	if v, err := strconv.Atoi(os.Getenv("LLMCLOUD_STRUCT_N")); err == nil && v > 0 {
		return v
	}
	return n
}

// TestBulkSchemasRandomModel: 1,000 generations from rand3M (a random Llama with the 512-piece
// SentencePiece vocabulary of stories260K, byte fallback included).
func TestBulkSchemasRandomModel(t *testing.T) {
	n := count(1000)
	if testing.Short() {
		n = 200
	}
	cs := compileAll(t)
	b := openBundle(t, fixture.Path(t, "models", "rand3M", "rand3M-q8_0.gguf"))
	bulk(t, b, cs, n, 600)
}

// TestBulkSchemasQwenTokenizer: 50 generations from a random Qwen3-shaped model with the real
// Qwen tokenizer (151,646 byte-level BPE pieces, many of them spanning JSON punctuation and
// text, such as `":"` or `"},{"`), which is where token-boundary mistakes in a grammar show.
func TestBulkSchemasQwenTokenizer(t *testing.T) {
	n := count(50)
	if testing.Short() {
		n = 20
	}
	cs := compileAll(t)
	b := openBundle(t, synthQwen(t))
	bulk(t, b, cs, n, 600)
}

// synthQwen writes a tiny random Qwen3 with the Qwen tokenizer into a temporary directory.
func synthQwen(t testing.TB) string {
	t.Helper()
	v, tmpl, err := synth.LoadTokenizer(fixture.Path(t, "models", "qwen2-tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	o := synth.Options{Arch: "qwen3", Dim: 64, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128,
		Tied: true, CtxLen: 1024, Seed: 16, Name: "qwen3-random", Tokenizer: v, ChatTemplate: tmpl}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "qwen3.gguf")
	if err := convert.Write(path, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	return path
}

// compiled is one schema ready to run: its grammar and its independent validator.
type compiled struct {
	testSchema
	g *grammar.Grammar
	v *jsonschema.Schema
}

// compileAll compiles every schema, skipping the test while the grammar engine is a stub.
func compileAll(t *testing.T) []compiled {
	t.Helper()
	vs := make([]*jsonschema.Schema, len(schemas))
	for i, s := range schemas {
		v, err := validator(s.name, s.schema)
		if err != nil {
			t.Fatalf("%s: the validator rejects the schema itself: %v", s.name, err)
		}
		vs[i] = v
	}
	var out []compiled
	var worst time.Duration
	for i, s := range schemas {
		v := vs[i]
		t0 := time.Now()
		g, err := compileSchema(s.schema)
		worst = max(worst, time.Since(t0))
		switch {
		case notYet(err):
			t.Skipf("grammar engine not there yet: %v", err)
		case err != nil && beyondIssue[s.name]:
			t.Logf("%s: not compiled (keyword beyond issue 16's list): %v", s.name, err)
			continue
		case err != nil:
			t.Errorf("%s: compile: %v", s.name, err)
			continue
		}
		out = append(out, compiled{s, g, v})
	}
	t.Logf("%d of %d schemas compiled (slowest %v)", len(out), len(schemas), worst)
	return out
}

// bulk runs n constrained generations over the schemas, round robin, all added at once, and
// validates each output.
func bulk(t *testing.T, b *loader.Bundle, cs []compiled, n, maxTokens int) {
	if len(cs) == 0 {
		t.Fatal("no schema compiled")
	}
	vocab := vocabOf(b.Tok)
	e := newEngine(t, b, 128)
	prompt := b.Tok.Encode("Answer with JSON only: ", true, false)
	reqs := make([]engine.Request, n)
	for i := range reqs {
		reqs[i] = engine.Request{
			ID:         fmt.Sprintf("s%d-%s", i, cs[i%len(cs)].name),
			Prompt:     prompt,
			Params:     sample.Params{Temperature: 1, TopP: 1, Seed: uint64(i + 1)},
			MaxTokens:  maxTokens,
			Constraint: cs[i%len(cs)].g.NewMatcher(vocab),
		}
	}
	t0 := time.Now()
	res := runAll(t, e, reqs)
	wall := time.Since(t0)

	finishes := map[string]int{}
	var tokens, longest int
	var bad []string
	badBySchema := map[string]int{}
	for i, r := range res {
		c := cs[i%len(cs)]
		finishes[r.finish]++
		tokens += r.tokens
		longest = max(longest, r.tokens)
		var why string
		switch {
		case r.err != nil:
			why = "engine error: " + r.err.Error()
		case r.finish != engine.FinishStop:
			why = "finish " + r.finish
		default:
			if err := validate(c.v, r.text); err != nil {
				why = "invalid: " + strings.ReplaceAll(err.Error(), "\n", " ")
			}
		}
		if why != "" {
			badBySchema[c.name]++
			bad = append(bad, fmt.Sprintf("%s (%d tokens) %s\n    output %q", reqs[i].ID, r.tokens, why, clip(r.text, 300)))
		}
	}
	t.Logf("%d generations over %d schemas in %v: finish reasons %v; %d tokens (%.0f tok/s, longest %d)",
		n, len(cs), wall.Round(time.Millisecond), finishes, tokens, float64(tokens)/wall.Seconds(), longest)
	if len(bad) > 0 {
		names := make([]string, 0, len(badBySchema))
		for k, v := range badBySchema {
			names = append(names, fmt.Sprintf("%s:%d", k, v))
		}
		slices.Sort(names)
		t.Errorf("%d of %d generations failed (by schema: %s); the first:\n  %s", len(bad), n,
			strings.Join(names, " "), strings.Join(bad[:min(8, len(bad))], "\n  "))
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
