// Reasoning tests: the parsers whole and streamed in every split, and the Constraint wrapper
// over a toy byte-level inner constraint.
package reasoning

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		parser, text, reasoning, content string
	}{
		{"qwen3", "<think>\nLet me think.\n</think>\n\nThe answer is 4.", "\nLet me think.\n", "The answer is 4."},
		{"qwen3", "The answer is 4.", "", "The answer is 4."},
		{"qwen3", "\n<think>ok</think>", "ok", ""},
		{"qwen3", "<think>cut off", "cut off", ""},
		{"qwen3", "<thinking>x</thinking>", "", "<thinking>x</thinking>"},
		{"qwen3", "<thi", "", "<thi"},
		{"qwen3", "<think>日本語 🤔</think>答え", "日本語 🤔", "答え"},
		{"deepseek_r1", "Hmm, 2+2.\n</think>\n\n4", "Hmm, 2+2.\n", "4"},
		{"deepseek_r1", "<think>Hmm</think>4", "Hmm", "4"},
		{"deepseek_r1", "still thinking", "still thinking", ""},
		{"deepseek_r1", "a < b </thin", "a < b </thin", ""},
	} {
		p, err := Lookup(c.parser)
		if err != nil {
			t.Fatal(err)
		}
		r, ct := p.Parse(c.text)
		if r != c.reasoning || ct != c.content {
			t.Errorf("%s %q: got %q / %q, want %q / %q", c.parser, c.text, r, ct, c.reasoning, c.content)
		}
		// streamed in every two-piece split and byte by byte: the same text, in order
		var splits [][]string
		for i := 0; i <= len(c.text); i++ {
			splits = append(splits, []string{c.text[:i], c.text[i:]})
		}
		var bytes []string
		for i := range len(c.text) {
			bytes = append(bytes, c.text[i:i+1])
		}
		splits = append(splits, bytes)
		for _, ps := range splits {
			s := p.NewStream()
			var rs, cs string
			for _, piece := range ps {
				r, ct := s.Feed(piece)
				if r != "" && cs != "" {
					t.Errorf("%s %q: reasoning after content", c.parser, ps)
				}
				rs, cs = rs+r, cs+ct
			}
			r, ct := s.Finish()
			rs, cs = rs+r, cs+ct
			if rs != c.reasoning || cs != c.content {
				t.Errorf("%s split %q: got %q / %q", c.parser, ps, rs, cs)
				break
			}
		}
	}
	if _, err := Lookup("granite"); err == nil || !strings.Contains(err.Error(), "deepseek_r1, qwen3") {
		t.Errorf("%v", err)
	}
}

// Partial tags are held; reasoning goes out as soon as it cannot be part of </think>.
func TestStreamHold(t *testing.T) {
	p, _ := Lookup("qwen3")
	s := p.NewStream()
	if r, c := s.Feed("<th"); r != "" || c != "" {
		t.Fatalf("%q %q", r, c)
	}
	if r, c := s.Feed("ink>abc</"); r != "abc" || c != "" {
		t.Fatalf("%q %q", r, c)
	}
	if r, c := s.Feed("think>\n"); r != "" || c != "" {
		t.Fatalf("%q %q", r, c)
	}
	if r, c := s.Feed("\n{"); r != "" || c != "{" || s.Reasoning() {
		t.Fatalf("%q %q", r, c)
	}
}

// inner is a constraint over a byte vocabulary that accepts exactly the string want.
type inner struct {
	want string
	pos  []int // positions after each Accept/AcceptBytes
}

func (m *inner) at() int {
	if len(m.pos) == 0 {
		return 0
	}
	return m.pos[len(m.pos)-1]
}
func (m *inner) FillMask(mask []uint64) {
	clear(mask)
	if p := m.at(); p < len(m.want) {
		b := m.want[p]
		mask[b/64] |= 1 << (b % 64)
	}
}
func (m *inner) Accept(tok int) error { return m.AcceptBytes([]byte{byte(tok)}) }
func (m *inner) AcceptBytes(b []byte) error {
	if !strings.HasPrefix(m.want[m.at():], string(b)) {
		return errors.New("not allowed")
	}
	m.pos = append(m.pos, m.at()+len(b))
	return nil
}
func (m *inner) Rollback(n int) { m.pos = m.pos[:len(m.pos)-n] }
func (m *inner) Done() bool     { return m.at() == len(m.want) }

// tokens of a toy vocabulary: 0..255 single bytes, 256 = "</think>\n\n{", 257 = "</".
func piece(tok int) []byte {
	switch tok {
	case 256:
		return []byte("</think>\n\n{")
	case 257:
		return []byte("</")
	}
	return []byte{byte(tok)}
}

func TestConstraint(t *testing.T) {
	in := &inner{want: `{"a":1}`}
	qwen3, _ := Lookup("qwen3")
	ds, _ := Lookup("deepseek_r1")
	c := ds.Wrap(in, piece, 258, "<|im_start|>assistant\n")
	mask := make([]uint64, 5)
	c.FillMask(mask)
	if mask[0] != ^uint64(0) || mask[4] != ^uint64(0) || c.Active() {
		t.Fatal("reasoning is not free")
	}
	accept := func(toks ...int) {
		t.Helper()
		for _, tok := range toks {
			if err := c.Accept(tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	accept('<', 't', 'h', 'i', 'n', 'k', '>', 'x', 257, 't', 'h', 'i', 'n', 'k')
	if c.Active() {
		t.Fatal("active before the tag closed")
	}
	accept('>')
	if !c.Active() || c.Done() {
		t.Fatal("not active after </think>")
	}
	c.FillMask(mask)
	if mask[0] != 0 || mask[1] != 1<<('{'-64) {
		t.Fatalf("inner mask not applied: %x", mask)
	}
	c.Rollback(3) // back before "ink>" ended... to "</thi"
	if c.Active() {
		t.Fatal("rollback did not reopen the reasoning")
	}
	accept('n', 'k', 256) // the tag and the answer's first byte in one token
	if !c.Active() || in.at() != 1 {
		t.Fatalf("active %v, inner at %d", c.Active(), in.at())
	}
	accept('"', 'a', '"', ':', '1', '}')
	if !c.Done() {
		t.Fatal("not done")
	}
	c.Rollback(7) // back into the reasoning: inner rolled back to its start
	if c.Active() || in.at() != 0 {
		t.Fatalf("active %v, inner at %d", c.Active(), in.at())
	}

	// thinking switched off in the prompt: the grammar applies from the first token
	off := qwen3.Wrap(&inner{want: "{}"}, piece, 258, "<|im_start|>assistant\n<think>\n\n</think>\n\n")
	off.FillMask(mask)
	if !off.Active() || mask[1] != 1<<('{'-64) {
		t.Fatal("thinking off: inner not applied at once")
	}
}

func bit(mask []uint64, id int) bool { return mask[id/64]>>(id%64)&1 == 1 }

// qwen3: the reply may open <think> or start the answer; the first token only the answer
// allows decides.
func TestConstraintOpening(t *testing.T) {
	qwen3, _ := Lookup("qwen3")
	mask := make([]uint64, 5)
	in := &inner{want: `<tool_call>{}`}
	c := qwen3.Wrap(in, piece, 258, "<|im_start|>assistant\n")
	c.FillMask(mask)
	if !bit(mask, '<') || bit(mask, '{') || bit(mask, 'a') || bit(mask, 257) || bit(mask, 256) {
		t.Fatalf("opening mask %x", mask)
	}
	for _, tok := range []int{'<', 't'} { // both <think> and <tool_call> so far
		if err := c.Accept(tok); err != nil || c.Active() {
			t.Fatal(err)
		}
	}
	c.FillMask(mask)
	if !bit(mask, 'h') || !bit(mask, 'o') || bit(mask, 'x') {
		t.Fatalf("mask after <t: %x", mask)
	}
	if err := c.Accept('o'); err != nil || !c.Active() || in.at() != 3 {
		t.Fatalf("answer did not start: %v %v %d", err, c.Active(), in.at())
	}
	c.Rollback(1)
	for _, tok := range []int{'h', 'i', 'n', 'k'} {
		if err := c.Accept(tok); err != nil || c.Active() {
			t.Fatal(err)
		}
	}
	if c.Accept('x') == nil {
		t.Fatal("<thinx accepted")
	}
	if err := c.Accept('>'); err != nil || c.Active() || in.at() != 0 {
		t.Fatalf("think did not open: %v, inner at %d", err, in.at())
	}
	c.FillMask(mask)
	if mask[2] != ^uint64(0) {
		t.Fatal("reasoning not free")
	}
	c.Rollback(5) // back to "<t": inner follows again
	if in.at() != 2 || c.Active() {
		t.Fatalf("inner at %d", in.at())
	}
	// a reply that starts with the answer at once
	in2 := &inner{want: `{}`}
	c2 := qwen3.Wrap(in2, piece, 258, "")
	if err := c2.Accept('{'); err != nil || !c2.Active() || in2.at() != 1 {
		t.Fatal("answer at once")
	}
}
