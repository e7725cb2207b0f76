// Tests of ForcingMatcher on real tokenizers (Llama 3 byte-level BPE, Qwen2, the stories260K
// SentencePiece): the forced tokens spell exactly the forced bytes minus the last token (all
// of them when the grammar is Done after), the Matcher is left after them, and driving a whole
// document token by token with forcing yields the same text and a valid sentence.
package grammar

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tokenizer"
)

type forceTok struct {
	name  string
	tok   *tokenizer.Tokenizer
	vocab *Vocab
}

func forceToks(t *testing.T) []forceTok {
	l := llamaVocab(t)
	out := []forceTok{{"llama3", l.tok, l.vocab}}
	for _, p := range [][]string{{"models", "stories260K", "tok512.model"}, {"models", "qwen2-tokenizer"}} {
		v, _, err := tokenizer.OpenVocab(fixture.Path(t, p...))
		if err != nil {
			t.Fatal(err)
		}
		tk, err := tokenizer.New(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, forceTok{filepath.Base(p[1]), tk, VocabFrom(tk, 0)})
	}
	return out
}

func (ft forceTok) encode(s string) []int {
	return PlainEncoder(func(s string) []int { return ft.tok.Encode(s, false, false) }, ft.tok.Piece)(s)
}

func (ft forceTok) spell(toks []int) []byte {
	var b []byte
	for _, id := range toks {
		b = append(b, ft.vocab.tokens[id]...)
	}
	return b
}

func TestForcedTokens(t *testing.T) {
	for _, ft := range forceToks(t) {
		t.Run(ft.name, func(t *testing.T) {
			g, err := Compile(schemaIR(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			m := NewForcing(g.NewMatcher(ft.vocab), ft.encode)
			want := m.ForcedBytes()
			if string(want) != `{"name":"` {
				t.Fatalf("forced bytes %q", want)
			}
			toks := m.Forced()
			got := ft.spell(toks)
			if len(toks) == 0 || !bytes.HasPrefix(want, got) || len(got) == len(want) {
				t.Fatalf("forced %v = %q, want a proper prefix of %q", toks, got, want)
			}
			// The matcher is past them: the rest of the forced bytes is what it forces now.
			if rest := m.ForcedBytes(); string(got)+string(rest) != string(want) {
				t.Errorf("after %q the matcher forces %q", got, rest)
			}
			t.Logf("%q -> %q %v", want, got, toks)

			// Done after the span: every token is forced.
			g2, err := Compile(&IR{Start: "root", Rules: map[string]*Expr{"root": Lit(`{"tool": "get_weather"}`)}}, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			m2 := NewForcing(g2.NewMatcher(ft.vocab), ft.encode)
			toks = m2.Forced()
			if string(ft.spell(toks)) != `{"tool": "get_weather"}` || !m2.Done() {
				t.Errorf("whole literal: %v = %q, done %v", toks, ft.spell(toks), m2.Done())
			}
			if m2.Forced() != nil {
				t.Error("Forced after Done")
			}
		})
	}
}

// TestForcedDrive drives each document through a ForcingMatcher, choosing at each free step
// the longest token that continues the document (as a model might) and taking what Forced
// gives: the text spelled is the document, every step is accepted, and it ends Done-able.
func TestForcedDrive(t *testing.T) {
	for _, ft := range forceToks(t) {
		t.Run(ft.name, func(t *testing.T) {
			g, err := Compile(schemaIR(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range jsonDocs {
				m := NewForcing(g.NewMatcher(ft.vocab), ft.encode)
				var text []byte
				free, forced := 0, 0
				for len(text) < len(doc) {
					rest := doc[len(text):]
					best := -1
					for id, p := range ft.vocab.tokens {
						if len(p) > 0 && bytes.HasPrefix([]byte(rest), p) && (best < 0 || len(p) > len(ft.vocab.tokens[best])) {
							best = id
						}
					}
					if best < 0 || m.Accept(best) != nil {
						t.Fatalf("%q: no token continues at %q", doc, rest)
					}
					free++
					text = append(text, ft.vocab.tokens[best]...)
					f := m.Forced()
					forced += len(f)
					text = append(text, ft.spell(f)...)
					if !bytes.HasPrefix([]byte(doc), text) {
						t.Fatalf("%q: forced text led to %q", doc, text)
					}
				}
				if !m.CanEnd() {
					t.Errorf("%q: cannot end", doc)
				}
				if forced == 0 {
					t.Errorf("%q: nothing forced", doc)
				}
				t.Logf("%d sampled + %d forced tokens", free, forced)
			}
		})
	}
}
