// Jump forward through the wrapper, with the real Qwen tokenizer and a grammar.ForcingMatcher
// inside: nothing is forced while the reply reasons (or may still open <think>); once the
// answer has started the wrapper passes on the tokens the grammar forces, the reply driven the
// way the engine drives it still parses, and Rollback over forced tokens (and back into the
// reasoning) leaves the wrapper as replaying the same tokens through Accept does.
package reasoning

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/grammar"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tokenizer"
)

type forceSetup struct {
	t      *testing.T
	tok    *tokenizer.Tokenizer
	voc    *grammar.Vocab
	g      *grammar.Grammar
	encode func(string) []int
}

func newForceSetup(t *testing.T) *forceSetup {
	t.Helper()
	v, _, err := tokenizer.OpenVocab(fixture.Path(t, "models", "qwen2-tokenizer"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	ir := &grammar.IR{Start: "root", Rules: map[string]*grammar.Expr{
		"root": grammar.Seq(grammar.Lit(`{"name":"`), grammar.Re(`[a-z]{1,8}`),
			grammar.Lit(`","age":`), grammar.Re(`[1-9][0-9]?`), grammar.Lit(`}`)),
	}}
	g, err := grammar.Compile(ir, grammar.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	enc := grammar.PlainEncoder(func(s string) []int { return tok.Encode(s, false, false) }, tok.Piece)
	return &forceSetup{t: t, tok: tok, voc: grammar.VocabFrom(tok, 0), g: g, encode: enc}
}

// wrap wraps a fresh ForcingMatcher, returned too so tests can look inside.
func (s *forceSetup) wrap(parser, prompt string) (*Constraint, *grammar.ForcingMatcher) {
	p, err := Lookup(parser)
	if err != nil {
		s.t.Fatal(err)
	}
	fm := grammar.NewForcing(s.g.NewMatcher(s.voc), s.encode)
	return p.Wrap(fm, s.tok.Piece, s.tok.VocabSize(), prompt), fm
}

func (s *forceSetup) spell(ids []int) string {
	var b []byte
	for _, id := range ids {
		b = append(b, s.tok.Piece(id)...)
	}
	return string(b)
}

// accept accepts a sampled token as the engine does: allowed by the mask, accepted, then
// Forced; it returns the token and the forced ones.
func (s *forceSetup) accept(c *Constraint, id int) []int {
	s.t.Helper()
	mask := make([]uint64, s.voc.MaskWords())
	c.FillMask(mask)
	if mask[id/64]&(1<<(id%64)) == 0 {
		s.t.Fatalf("token %d %q is masked out", id, s.tok.Piece(id))
	}
	if err := c.Accept(id); err != nil {
		s.t.Fatalf("token %d %q refused: %v", id, s.tok.Piece(id), err)
	}
	return append([]int{id}, c.Forced()...)
}

// drive writes reasoning (which must end with </think>, or be empty) then samples answer's
// tokens, appending what is forced after each; it returns every token and how many were
// forced.
func (s *forceSetup) drive(c *Constraint, reasoning, answer string) (ids []int, forced int) {
	s.t.Helper()
	written := "" // the answer so far
	for _, id := range s.tok.Encode(reasoning, false, false) {
		if c.Active() {
			s.t.Fatalf("answer started inside %q", reasoning)
		}
		got := s.accept(c, id)
		if !c.Active() && len(got) > 1 {
			s.t.Fatalf("forced %v while reasoning", got[1:])
		}
		ids = append(ids, got...)
		forced += len(got) - 1
		written += s.spell(got[1:])
	}
	if !c.Active() {
		s.t.Fatalf("answer not started after %q", reasoning)
	}
	for !c.Done() {
		rest, ok := strings.CutPrefix(answer, written)
		if !ok || rest == "" {
			s.t.Fatalf("wrote %q of %q, not done", written, answer)
		}
		got := s.accept(c, s.encode(rest)[0])
		ids = append(ids, got...)
		forced += len(got) - 1
		written += s.spell(got)
	}
	if written != answer {
		s.t.Fatalf("done after %q, want %q", written, answer)
	}
	return ids, forced
}

// sameState fails unless a and b allow the same tokens and agree on Active and Done.
func (s *forceSetup) sameState(what string, a, b *Constraint) {
	s.t.Helper()
	ma, mb := make([]uint64, s.voc.MaskWords()), make([]uint64, s.voc.MaskWords())
	a.FillMask(ma)
	b.FillMask(mb)
	if !slices.Equal(ma, mb) || a.Active() != b.Active() || a.Done() != b.Done() {
		s.t.Fatalf("%s: state differs from a replay (active %v/%v, done %v/%v)", what, a.Active(), b.Active(), a.Done(), b.Done())
	}
}

func TestWrapForcedAfterThink(t *testing.T) {
	s := newForceSetup(t)
	c, fm := s.wrap("qwen3", "<|im_start|>assistant\n")
	// At the start the reply may still open <think>: the grammar forces `{"name":"` but the
	// wrapper must not, and the inner matcher must not move.
	if f := c.Forced(); f != nil {
		t.Fatalf("forced %v before the reply chose to reason", f)
	}
	if b := string(fm.ForcedBytes()); b != `{"name":"` {
		t.Fatalf("inner forces %q at the start", b)
	}
	for _, id := range s.tok.Encode("<think>\nThe user wants {\"name\":\"x\"} as JSON.\n", false, false) {
		if got := s.accept(c, id); len(got) != 1 {
			t.Fatalf("forced %v while reasoning", got[1:])
		}
	}
	end := s.tok.Encode("</think>", false, false)
	for i, id := range end {
		got := s.accept(c, id)
		if i < len(end)-1 && len(got) != 1 {
			t.Fatalf("forced %v before </think> was complete", got[1:])
		}
		if i < len(end)-1 {
			continue
		}
		// The answer has started: the wrapper forces what the grammar forces, minus the last
		// token (the model writes it).
		forced := got[1:]
		want := s.encode(`{"name":"`)
		if len(want) < 2 {
			t.Fatalf("encode %v: too few tokens to test forcing", want)
		}
		want = want[:len(want)-1]
		if s.spell(forced) != s.spell(want) {
			t.Fatalf("forced %v %q after </think>, want %q", forced, s.spell(forced), s.spell(want))
		}
		if rest := string(fm.ForcedBytes()); s.spell(forced)+rest != `{"name":"` {
			t.Fatalf("after forcing %q the inner forces %q", s.spell(forced), rest)
		}
		// Rollback over the forced tokens: the answer is at its start again and forces the same.
		c.Rollback(len(forced))
		if !c.Active() || string(fm.ForcedBytes()) != `{"name":"` {
			t.Fatalf("after Rollback(%d): active %v, inner forces %q", len(forced), c.Active(), fm.ForcedBytes())
		}
		// Over </think> too: back in the reasoning, nothing forced, and </think> reopens the answer.
		c.Rollback(len(end))
		if c.Active() || c.st.ph != thinking {
			t.Fatalf("after rolling back </think>: phase %v", c.st.ph)
		}
		if f := c.Forced(); f != nil {
			t.Fatalf("forced %v after rolling back into the reasoning", f)
		}
		var again []int
		for _, id := range end {
			again = s.accept(c, id)
		}
		if !slices.Equal(again[1:], forced) {
			t.Fatalf("forced %v after </think> again, first time %v", again[1:], forced)
		}
	}
}

func TestWrapForcedReplyParses(t *testing.T) {
	s := newForceSetup(t)
	const reasoning, answer = "<think>\nA name and an age.\n</think>", `{"name":"bob","age":42}`
	c, _ := s.wrap("qwen3", "<|im_start|>assistant\n")
	ids, forced := s.drive(c, reasoning, answer)
	if forced < 2 {
		t.Fatalf("only %d tokens forced in %q", forced, s.spell(ids))
	}
	p, _ := Lookup("qwen3")
	r, content := p.Parse(s.tok.Decode(ids))
	var v struct {
		Name string
		Age  int
	}
	if err := json.Unmarshal([]byte(content), &v); err != nil || v.Name != "bob" || v.Age != 42 {
		t.Fatalf("reasoning %q content %q: %v %+v", r, content, err, v)
	}
	if !strings.Contains(r, "A name and an age.") {
		t.Fatalf("reasoning %q", r)
	}
	t.Logf("%d tokens, %d forced", len(ids), forced)

	// Rollback of any n (forced and sampled tokens mixed, into the reasoning) leaves the
	// wrapper as a replay of the first len(ids)-n tokens through Accept.
	for _, n := range []int{1, 2, 3, 5, 8, len(ids) - 12, len(ids) - 3, len(ids)} {
		if n < 0 || n > len(ids) {
			continue
		}
		c, _ := s.wrap("qwen3", "<|im_start|>assistant\n")
		if got, _ := s.drive(c, reasoning, answer); !slices.Equal(got, ids) {
			t.Fatalf("second drive gave %v, first %v", got, ids)
		}
		c.Rollback(n)
		r, _ := s.wrap("qwen3", "<|im_start|>assistant\n")
		for _, id := range ids[:len(ids)-n] {
			if err := r.Accept(id); err != nil {
				t.Fatal(err)
			}
		}
		s.sameState(fmt.Sprintf("Rollback(%d)", n), c, r)
		// And the rest of the reply can be written again, forcing the same tokens.
		var rest []int
		for len(ids[:len(ids)-n])+len(rest) < len(ids) {
			rest = append(rest, s.accept(c, ids[len(ids)-n+len(rest)])...)
		}
		if !slices.Equal(append(slices.Clone(ids[:len(ids)-n]), rest...), ids) || !c.Done() {
			t.Fatalf("after Rollback(%d) the reply continued as %q", n, s.spell(rest))
		}
	}
}

func TestWrapForcedOtherStarts(t *testing.T) {
	s := newForceSetup(t)
	// deepseek_r1 starts inside the reasoning: nothing is forced until </think>.
	c, _ := s.wrap("deepseek_r1", "<|im_start|>assistant\n<think>\n")
	if f := c.Forced(); f != nil {
		t.Fatalf("deepseek_r1: forced %v inside the reasoning", f)
	}
	if ids, forced := s.drive(c, "Easy.\n</think>", `{"name":"al","age":7}`); forced == 0 {
		t.Fatalf("deepseek_r1: nothing forced in %q", s.spell(ids))
	}

	// A prompt that closed the reasoning: the answer starts at once, and so does forcing.
	c, fm := s.wrap("qwen3", "<|im_start|>assistant\n<think>\n\n</think>\n\n")
	f := c.Forced()
	if len(f) == 0 || s.spell(f)+string(fm.ForcedBytes()) != `{"name":"` {
		t.Fatalf("closed prompt: forced %v %q, inner then forces %q", f, s.spell(f), fm.ForcedBytes())
	}
	c.Rollback(len(f))
	if string(fm.ForcedBytes()) != `{"name":"` {
		t.Fatalf("closed prompt: after Rollback the inner forces %q", fm.ForcedBytes())
	}

	// An inner constraint that does not force: nothing is forced.
	p, _ := Lookup("qwen3")
	c = p.Wrap(s.g.NewMatcher(s.voc), s.tok.Piece, s.tok.VocabSize(), "<think>\n\n</think>\n\n")
	if f := c.Forced(); f != nil {
		t.Fatalf("plain matcher: forced %v", f)
	}
}
