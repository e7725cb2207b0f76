// A Constraint that leaves the reasoning free and constrains the answer: every token is
// allowed until the reply has written </think>; from then on the inner constraint (a grammar
// for structured output or tool calls) decides.

package reasoning

import (
	"strings"

	"github.com/llmcloud/llmcloud/engine"
)

// byteAcceptor is a constraint that can also be advanced by raw bytes (grammar.Matcher).
type byteAcceptor interface {
	AcceptBytes(b []byte) error
}

// Constraint wraps an inner constraint; see Wrap.
type Constraint struct {
	inner  engine.Constraint
	piece  func(tok int) []byte
	active bool   // the reasoning is over: inner decides
	tail   string // the last bytes of the reasoning (to find </think> across tokens)
	hist   []step
}

// step records one Accept, for Rollback.
type step struct {
	active bool   // state before the Accept
	tail   string // state before the Accept
	inner  int    // Accept/AcceptBytes calls it made on inner
}

var _ engine.Constraint = (*Constraint)(nil)

// Wrap returns a constraint that allows everything while the reply reasons and then applies
// inner. piece gives a token's bytes. prompt is the rendered prompt: when it already closed
// the reasoning (a Qwen3 template with thinking switched off ends it with
// "<think>\n\n</think>\n\n") the answer, and inner, start at once.
//
// Bytes that follow </think> inside the same token go to inner (after the newlines the
// parser drops) when it accepts bytes; a token is never refused after it was sampled.
func Wrap(inner engine.Constraint, piece func(tok int) []byte, prompt string) *Constraint {
	c := &Constraint{inner: inner, piece: piece}
	if t := strings.TrimRight(prompt, " \t\r\n"); strings.HasSuffix(t, End) {
		c.active = true
	}
	return c
}

// Active reports whether the answer has started (the inner constraint applies).
func (c *Constraint) Active() bool { return c.active }

// FillMask allows every token while the reply reasons.
func (c *Constraint) FillMask(mask []uint64) {
	if c.active {
		c.inner.FillMask(mask)
		return
	}
	for i := range mask {
		mask[i] = ^uint64(0)
	}
}

// Accept advances past tok.
func (c *Constraint) Accept(tok int) error {
	st := step{active: c.active, tail: c.tail}
	if c.active {
		if err := c.inner.Accept(tok); err != nil {
			return err
		}
		st.inner = 1
		c.hist = append(c.hist, st)
		return nil
	}
	text := c.tail + string(c.piece(tok))
	if i := strings.Index(text, End); i >= 0 {
		c.active, c.tail = true, ""
		rest := strings.TrimLeft(text[i+len(End):], "\n")
		if ba, ok := c.inner.(byteAcceptor); ok && rest != "" {
			if ba.AcceptBytes([]byte(rest)) == nil {
				st.inner = 1
			}
		}
	} else {
		c.tail = text[len(text)-heldBack(text, End):]
	}
	c.hist = append(c.hist, st)
	return nil
}

// Rollback undoes the last n Accepts.
func (c *Constraint) Rollback(n int) {
	n = min(n, len(c.hist))
	if n <= 0 {
		return
	}
	undo := 0
	for _, st := range c.hist[len(c.hist)-n:] {
		undo += st.inner
	}
	first := c.hist[len(c.hist)-n]
	c.active, c.tail = first.active, first.tail
	c.hist = c.hist[:len(c.hist)-n]
	if undo > 0 {
		c.inner.Rollback(undo)
	}
}

// Done reports that the answer is complete.
func (c *Constraint) Done() bool { return c.active && c.inner.Done() }
