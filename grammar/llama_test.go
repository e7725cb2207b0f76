// This file runs the engine on a real vocabulary (Llama 3's 128,256 tokens from testdata):
// JSON grammars written directly in the IR, masks checked against AcceptBytes on sampled
// tokens, whole documents driven token by token, and the FillMask benchmarks.

package grammar

import (
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tokenizer"
)

const (
	testStringRe = `"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"`
	testNumberRe = `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
)

// jsonIR is any JSON object, with optional whitespace.
func jsonIR() *IR {
	ws := Re(`[ \t\n]*`)
	return &IR{Start: "root", Rules: map[string]*Expr{
		"root":  Seq(ws, Ref("obj"), ws),
		"obj":   Seq(Lit("{"), ws, Opt(Seq(Ref("pair"), Star(Seq(ws, Lit(","), ws, Ref("pair"))))), ws, Lit("}")),
		"pair":  Seq(Re(testStringRe), ws, Lit(":"), ws, Ref("value")),
		"value": Alt(Re(testStringRe), Re(testNumberRe), Lit("true"), Lit("false"), Lit("null"), Ref("obj"), Ref("array")),
		"array": Seq(Lit("["), ws, Opt(Seq(Ref("value"), Star(Seq(ws, Lit(","), ws, Ref("value"))))), ws, Lit("]")),
	}}
}

// schemaIR is what a JSON Schema frontend makes of an object with name, age, tags and ok
// (compact JSON, optional age).
func schemaIR() *IR {
	return &IR{Start: "root", Rules: map[string]*Expr{
		"root": Seq(Lit(`{"name":`), Re(testStringRe), Opt(Seq(Lit(`,"age":`), Re(testNumberRe))),
			Lit(`,"tags":[`), Opt(Seq(Re(testStringRe), Star(Seq(Lit(","), Re(testStringRe))))), Lit(`],"ok":`),
			Alt(Lit("true"), Lit("false")), Lit("}")),
	}}
}

type llama struct {
	tok   *tokenizer.Tokenizer
	vocab *Vocab
}

var (
	llamaOnce sync.Once
	llamaV    llama
	llamaErr  error
)

func llamaVocab(t testing.TB) llama {
	d := fixture.Path(t, "models", "llama3.2-tokenizer")
	llamaOnce.Do(func() {
		v, err := tokenizer.VocabFromGPT2Files(filepath.Join(d, "encoder.json"), filepath.Join(d, "vocab.bpe"))
		if err != nil {
			llamaErr = err
			return
		}
		tk, err := tokenizer.New(v)
		if err != nil {
			llamaErr = err
			return
		}
		llamaV = llama{tk, VocabFrom(tk, 0)}
	})
	if llamaErr != nil {
		t.Fatal(llamaErr)
	}
	return llamaV
}

var jsonDocs = []string{
	`{"name":"Bob \"the builder\" Smith","age":42,"tags":["a","long tag with spaces","üñí€ode"],"ok":true}`,
	`{"name":"","tags":[],"ok":false}`,
	`{"name":"x\u00e9\n","age":-0.5e10,"tags":["\\"],"ok":true}`,
}

// drive feeds doc token by token, checking each token is in the mask; it returns mask times.
func drive(t testing.TB, g *Grammar, l llama, doc string) []time.Duration {
	m := g.NewMatcher(l.vocab)
	mask := make([]uint64, l.vocab.MaskWords())
	var times []time.Duration
	for _, id := range l.tok.Encode(doc, false, false) {
		t0 := time.Now()
		m.FillMask(mask)
		times = append(times, time.Since(t0))
		if mask[id/64]>>(id%64)&1 == 0 {
			t.Fatalf("%q: token %d %q not in the mask", doc, id, l.vocab.tokens[id])
		}
		if err := m.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	m.FillMask(mask)
	if !m.CanEnd() {
		t.Fatalf("%q: not complete at the end", doc)
	}
	for _, e := range l.vocab.eos {
		if mask[e/64]>>(e%64)&1 == 0 {
			t.Fatalf("EOS %d not allowed at the end", e)
		}
	}
	return times
}

func pct(ts []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(p*float64(len(s)-1))]
}

func TestLlamaDocuments(t *testing.T) {
	l := llamaVocab(t)
	for name, ir := range map[string]*IR{"json": jsonIR(), "schema": schemaIR()} {
		t0 := time.Now()
		g := mustCompile(t, ir)
		compile := time.Since(t0)
		var cold, warm []time.Duration
		for _, doc := range jsonDocs {
			cold = append(cold, drive(t, g, l, doc)...)
		}
		for _, doc := range jsonDocs {
			warm = append(warm, drive(t, g, l, doc)...)
		}
		t.Logf("%s: compile %v; %d masks, first pass p50 %v p99 %v max %v; second pass p50 %v p99 %v",
			name, compile, len(cold), pct(cold, .5), pct(cold, .99), pct(cold, 1), pct(warm, .5), pct(warm, .99))
	}
}

// TestLlamaMaskSampled: in states along the documents, bit i of the mask is set iff
// AcceptBytes(token i) succeeds, on a sample of tokens (all tokens with a quote, a brace or a
// digit in them, and every 37th other token).
func TestLlamaMaskSampled(t *testing.T) {
	l := llamaVocab(t)
	var sample []int
	for i, b := range l.vocab.tokens {
		interesting := false
		for _, c := range b {
			interesting = interesting || c == '"' || c == '!' || c == '{' || c == '}' || c == ',' || c == ':' || c == '\\' || (c >= '0' && c <= '9')
		}
		if interesting || i%37 == 0 {
			sample = append(sample, i)
		}
	}
	// a string split into quote, body and quote terminals (the body ends everywhere: whole
	// subtrees of ending places), and one whose body may go on as another terminal
	split := &IR{Start: "root", Rules: map[string]*Expr{"root": Seq(Lit(`{"a":"`),
		Re(`(?:[^"\\\x00-\x1f]|\\["\\/bfnrt])*`), Lit(`"`), Lit("}"))}}
	ambiguous := &IR{Start: "root", Rules: map[string]*Expr{"root": Seq(Lit(`"`), Re(`[a-z ]*`),
		Alt(Lit(`"`), Seq(Re(`[a-z]+`), Lit("!"))))}}
	// a string of at most 12 characters: counted states, not a loop (text runs, lexer_chain.go)
	counted := &IR{Start: "root", Rules: map[string]*Expr{"root": Seq(Lit(`{"a":`),
		Re(`"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]){0,12}"`), Lit("}"))}}
	cases := []struct {
		ir   *IR
		docs []string
	}{
		{jsonIR(), jsonDocs[:2]}, {schemaIR(), jsonDocs[:2]},
		{split, []string{`{"a":"Hello \"world\" and more"}`}},
		{ambiguous, []string{`"hello world"`, `"hello worlds!`}},
		{counted, []string{`{"a":"héllo wörld"}`, `{"a":"abcdefghijkl"}`, `{"a":"a\"bc"}`}},
	}
	for _, c := range cases {
		g := mustCompile(t, c.ir)
		for _, doc := range c.docs {
			m := g.NewMatcher(l.vocab)
			mask := make([]uint64, l.vocab.MaskWords())
			ids := l.tok.Encode(doc, false, false)
			for k := 0; k <= len(ids); k++ {
				m.FillMask(mask)
				for _, i := range sample {
					got := mask[i/64]>>(i%64)&1 != 0
					want := len(l.vocab.tokens[i]) > 0 && m.AcceptBytes(l.vocab.tokens[i]) == nil
					if want {
						m.Rollback(1)
					}
					if got != want {
						t.Fatalf("%q after %d tokens: token %d %q: mask %v, AcceptBytes %v", doc, k, i, l.vocab.tokens[i], got, want)
					}
				}
				if k < len(ids) {
					if err := m.Accept(ids[k]); err != nil {
						t.Fatalf("%q after %d tokens: %v", doc, k, err)
					}
				}
			}
		}
	}
}

// benchAt measures FillMask after prefix, the state fresh each time (the token that led there
// is accepted again, so the Matcher's per-state memo is cold; the Grammar's caches are warm).
func benchAt(b *testing.B, ir *IR, prefix, last string) {
	l := llamaVocab(b)
	g := mustCompile(b, ir)
	m := g.NewMatcher(l.vocab)
	if err := m.AcceptBytes([]byte(prefix)); err != nil {
		b.Fatal(err)
	}
	mask := make([]uint64, l.vocab.MaskWords())
	m.AcceptBytes([]byte(last))
	m.FillMask(mask)
	m.Rollback(1)
	b.ResetTimer()
	for b.Loop() {
		m.AcceptBytes([]byte(last))
		m.FillMask(mask)
		m.Rollback(1)
	}
}

func BenchmarkFillMaskString(b *testing.B) { benchAt(b, schemaIR(), `{"name":"Bob`, ` Sm`) }
func BenchmarkFillMaskNumber(b *testing.B) { benchAt(b, schemaIR(), `{"name":"Bob","age":4`, `2`) }
func BenchmarkFillMaskKey(b *testing.B)    { benchAt(b, jsonIR(), `{"name":"Bob",`, ` `) }
func BenchmarkFillMaskBetween(b *testing.B) {
	benchAt(b, jsonIR(), `{"name":"Bob","age":42`, `,"x":"y"`)
}
func BenchmarkFillMaskJSONString(b *testing.B) { benchAt(b, jsonIR(), `{"name":"Bob`, ` Sm`) }

// BenchmarkFillMaskCold: a fresh Grammar each time (compile included), first mask inside a
// string; the Vocab's shared walks are warm (another grammar had the same string regex).
func BenchmarkFillMaskCold(b *testing.B) { benchCold(b, false) }

// BenchmarkFillMaskColdVocab: as Cold, with the Vocab's shared walks dropped each time (the
// first grammar a process sees: whole-trie walks).
func BenchmarkFillMaskColdVocab(b *testing.B) { benchCold(b, true) }

func benchCold(b *testing.B, dropShared bool) {
	l := llamaVocab(b)
	mask := make([]uint64, l.vocab.MaskWords())
	for b.Loop() {
		if dropShared {
			l.vocab.getShared().drop()
		}
		g, _ := Compile(schemaIR(), Limits{})
		m := g.NewMatcher(l.vocab)
		m.AcceptBytes([]byte(`{"name":"Bob`))
		m.FillMask(mask)
	}
}

func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		if _, err := Compile(jsonIR(), Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
