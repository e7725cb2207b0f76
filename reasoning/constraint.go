// A Constraint that leaves the reasoning free and constrains the answer: every token is
// allowed while the reply reasons; once it has written </think> the inner constraint (a
// grammar for structured output or tool calls) decides.
//
// Where the reply starts depends on the parser. deepseek_r1 replies start inside the
// reasoning. A qwen3 reply reasons only if it opens with <think>: at its start the allowed
// tokens are those that go on spelling <think> and those inner allows, and the first token
// that only inner allows starts the answer. A prompt that already closed the reasoning (Qwen3's
// template with thinking switched off ends in "<think>\n\n</think>\n\n") starts the answer at
// once.

package reasoning

import "strings"

// Inner is the constraint being wrapped: engine.Constraint's methods (grammar.Matcher has
// them). Declared here so the package imports no engine code; *Constraint is an
// engine.Constraint too.
type Inner interface {
	FillMask(mask []uint64)
	Accept(tok int) error
	Rollback(n int)
	Done() bool
}

// forcer is a constraint that reports the tokens its grammar forces (engine.Forcer,
// grammar.ForcingMatcher), already accepted.
type forcer interface {
	Forced() []int
}

// byteAcceptor is a constraint that can also be advanced by raw bytes (grammar.Matcher).
type byteAcceptor interface {
	AcceptBytes(b []byte) error
}

type phase uint8

const (
	opening   phase = iota // qwen3: the reply may still open with <think>
	thinking               // inside the reasoning: anything goes
	answering              // inner decides
)

// Constraint wraps an inner constraint; see Parser.Wrap.
type Constraint struct {
	inner Inner
	piece func(tok int) []byte
	size  int // vocabulary size
	st    wrapState
	hist  []step
}

// wrapState is everything Rollback restores.
type wrapState struct {
	ph        phase
	open      string // opening: the bytes of <think> written so far
	innerDead bool   // opening: inner refused a token (only <think> can follow)
	innerToks []int  // opening: the tokens inner accepted
	tail      string // thinking: the last bytes, for a </think> split across tokens
}

// step records one Accept, for Rollback.
type step struct {
	before  wrapState
	accepts int  // Accept/AcceptBytes calls made on inner
	rewound bool // inner was rolled back to its start (the reply opened <think>)
}

var _ Inner = (*Constraint)(nil)

// Wrap returns a constraint that keeps inner off the reasoning. piece gives a token's bytes
// for the size ids of the vocabulary; prompt is the rendered prompt.
//
// Bytes that follow </think> inside the same token go to inner (after the newlines the parser
// drops) when it accepts bytes; a token is never refused after it was sampled.
func (p *Parser) Wrap(inner Inner, piece func(tok int) []byte, size int, prompt string) *Constraint {
	c := &Constraint{inner: inner, piece: piece, size: size}
	switch {
	case strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), End):
		c.st.ph = answering
	case p.startsInside:
		c.st.ph = thinking
	}
	return c
}

// Active reports whether the answer has started (the inner constraint applies).
func (c *Constraint) Active() bool { return c.st.ph == answering }

// FillMask allows every token while the reply reasons.
func (c *Constraint) FillMask(mask []uint64) {
	switch c.st.ph {
	case answering:
		c.inner.FillMask(mask)
	case thinking:
		for i := range mask {
			mask[i] = ^uint64(0)
		}
	case opening:
		if c.st.innerDead {
			clear(mask)
		} else {
			c.inner.FillMask(mask)
		}
		rest := Start[len(c.st.open):] // what <think> still needs
		for id := range min(c.size, len(mask)*64) {
			p := c.piece(id)
			if n := min(len(p), len(rest)); n > 0 && string(p[:n]) == rest[:n] {
				mask[id/64] |= 1 << (id % 64)
			}
		}
	}
}

// Accept advances past tok.
func (c *Constraint) Accept(tok int) error {
	st := step{before: c.st}
	st.before.innerToks = append([]int(nil), c.st.innerToks...)
	switch c.st.ph {
	case answering:
		if err := c.inner.Accept(tok); err != nil {
			return err
		}
		st.accepts = 1
	case thinking:
		c.think(string(c.piece(tok)), &st)
	case opening:
		s := c.st.open + string(c.piece(tok))
		innerOK := false
		if !c.st.innerDead {
			if c.inner.Accept(tok) == nil {
				innerOK, st.accepts = true, 1
				c.st.innerToks = append(c.st.innerToks, tok)
			} else {
				c.st.innerDead = true
			}
		}
		switch {
		case strings.HasPrefix(s, Start): // the reasoning opened: inner starts afresh later
			if n := len(c.st.innerToks); n > 0 {
				c.inner.Rollback(n)
			}
			st.accepts, st.rewound = 0, true
			c.st = wrapState{ph: thinking}
			c.think(s[len(Start):], &st)
		case strings.HasPrefix(Start, s):
			c.st.open = s
		case innerOK: // the answer started without reasoning
			c.st = wrapState{ph: answering}
		default:
			c.st = st.before
			return errNotAllowed
		}
	}
	c.hist = append(c.hist, st)
	return nil
}

// think follows reasoning text; at </think> the answer starts.
func (c *Constraint) think(text string, st *step) {
	text = c.st.tail + text
	i := strings.Index(text, End)
	if i < 0 {
		c.st.tail = text[len(text)-heldBack(text, End):]
		return
	}
	c.st = wrapState{ph: answering}
	rest := strings.TrimLeft(text[i+len(End):], "\n")
	if ba, ok := c.inner.(byteAcceptor); ok && rest != "" {
		if ba.AcceptBytes([]byte(rest)) == nil {
			st.accepts++
		}
	}
}

// Forced is engine.Forcer: nothing while the reply may still reason; once the answer has
// started, the tokens the inner constraint forces (if it is a forcer), which it has accepted.
// Each is recorded as one Accept of the wrapper, so Rollback counts them as the engine does.
func (c *Constraint) Forced() []int {
	f, ok := c.inner.(forcer)
	if c.st.ph != answering || !ok {
		return nil
	}
	toks := f.Forced()
	for range toks {
		c.hist = append(c.hist, step{before: c.st, accepts: 1})
	}
	return toks
}

// Rollback undoes the last n Accepts.
func (c *Constraint) Rollback(n int) {
	for ; n > 0 && len(c.hist) > 0; n-- {
		st := c.hist[len(c.hist)-1]
		c.hist = c.hist[:len(c.hist)-1]
		if st.accepts > 0 {
			c.inner.Rollback(st.accepts)
		}
		if st.rewound {
			for _, tok := range st.before.innerToks {
				c.inner.Accept(tok)
			}
		}
		c.st = st.before
	}
}

// Done reports that the answer is complete.
func (c *Constraint) Done() bool { return c.st.ph == answering && c.inner.Done() }

type notAllowed struct{}

func (notAllowed) Error() string { return "reasoning: token not allowed" }

var errNotAllowed error = notAllowed{}
