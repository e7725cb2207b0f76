// The streaming machinery every format shares: the text seen so far, how much of it has been
// given out, the calls started, and the deltas waiting to be returned. A format's step
// function (formats.go) moves pos forward and calls the emit helpers here.

package toolcall

import "strings"

// Stream follows one streamed reply. Not safe for concurrent use.
type Stream struct {
	p         *Parser
	text      string // everything fed so far
	pos       int    // text[:pos] is dealt with (given out as content, or part of a call, or dropped)
	mode      int    // the format's state
	markStart int    // where the current call's marker began (its text is content if it fails)
	final     bool   // Finish was called: no more text comes
	plain     bool   // everything from pos on is content
	drop      bool   // everything from pos on is dropped
	broken    bool   // a call started and then did not parse
	out       []Delta
	calls     []*callState // calls whose first delta went out
	cur       *callState   // the call being read (nil between calls)
}

type callState struct {
	call Call
	sent bool // the first delta went out
	done bool // the call's text is complete
}

// NewStream starts following a reply.
func (p *Parser) NewStream() *Stream { return &Stream{p: p} }

// Feed adds the next piece of the reply and returns what can be given out now.
func (s *Stream) Feed(delta string) []Delta {
	s.text += delta
	s.run()
	return s.take()
}

// Finish ends the reply: held-back text that turned out not to be a call is given out.
func (s *Stream) Finish() []Delta {
	s.final = true
	s.run()
	return s.take()
}

// Calls returns the complete calls so far, in order.
func (s *Stream) Calls() []Call {
	var out []Call
	for _, c := range s.calls {
		if c.done {
			out = append(out, c.call)
		}
	}
	return out
}

// Started reports whether any call has been given out.
func (s *Stream) Started() bool { return len(s.calls) > 0 }

func (s *Stream) run() {
	for {
		switch {
		case s.plain:
			s.content(s.text[s.pos:])
			s.pos = len(s.text)
			return
		case s.drop:
			s.pos = len(s.text)
			return
		}
		if !s.p.step(s) {
			if s.final && s.cur != nil {
				s.fail()
				continue
			}
			return
		}
	}
}

func (s *Stream) take() []Delta {
	out := s.out
	s.out = nil
	return out
}

// content gives out content text (merged with the content delta before it).
func (s *Stream) content(t string) {
	if t == "" {
		return
	}
	if n := len(s.out); n > 0 && s.out[n-1].Call == nil {
		s.out[n-1].Content += t
		return
	}
	s.out = append(s.out, Delta{Content: t})
}

// begin starts a call (its name is not known yet).
func (s *Stream) begin() {
	if s.cur == nil {
		s.cur = &callState{}
	}
}

// name gives out the current call's first delta.
func (s *Stream) name(n string) {
	s.begin()
	c := s.cur
	if c.sent {
		return
	}
	c.sent = true
	c.call = Call{ID: NewID(), Name: n}
	s.calls = append(s.calls, c)
	s.out = append(s.out, Delta{Call: &CallDelta{Index: len(s.calls) - 1, First: true, ID: c.call.ID, Name: n}})
}

// args gives out the new part of the current call's arguments, whose text so far is a.
func (s *Stream) args(a string) {
	c := s.cur
	if c == nil || !c.sent || len(a) <= len(c.call.Arguments) {
		return
	}
	piece := a[len(c.call.Arguments):]
	c.call.Arguments = a
	s.out = append(s.out, Delta{Call: &CallDelta{Index: len(s.calls) - 1, Arguments: piece}})
}

// end completes the current call.
func (s *Stream) end() {
	if s.cur.call.Arguments == "" {
		s.args("{}")
	}
	s.cur.done = true
	s.cur = nil
}

// fail handles a call that does not parse: before any call went out its text is content;
// after, the reply is broken and the rest is dropped.
func (s *Stream) fail() {
	if len(s.calls) > 0 {
		s.broken, s.drop = true, true
	} else {
		s.pos, s.plain = s.markStart, true
	}
	s.cur = nil
}

// object follows the call object at text[pos:]: its name, then its arguments as they come.
// It returns true (and moves pos past the object) once the object is complete.
func (s *Stream) object(argKeys ...string) (complete bool) {
	rest := s.text[s.pos:]
	if strings.TrimLeft(rest, " \t\r\n") == "" {
		switch {
		case !s.final:
		case s.cur == nil && len(s.calls) > 0:
			s.drop = true // trailing whitespace after a separator
		default:
			s.fail() // a marker and nothing after it
		}
		return false
	}
	s.begin()
	cs := scanCall(rest, argKeys...)
	if cs.status == scanInvalid {
		s.fail()
		return false
	}
	if cs.hasName {
		s.name(cs.name)
	}
	if cs.argsStart >= 0 {
		s.args(rest[cs.argsStart:cs.argsEnd])
	}
	if cs.status != scanComplete {
		return false
	}
	if !s.cur.sent { // an object without a name is not a call
		s.fail()
		return false
	}
	s.end()
	s.pos += cs.end
	return true
}

// held is how many bytes at the end of t could be the start of marker.
func held(t, marker string) int {
	for k := min(len(t), len(marker)-1); k > 0; k-- {
		if strings.HasSuffix(t, marker[:k]) {
			return k
		}
	}
	return 0
}

// untilMarker gives out (or, with emit false, drops) the text before marker; true when
// marker was found (pos is then past it and markStart at it).
func (s *Stream) untilMarker(marker string, emit bool) bool {
	rest := s.text[s.pos:]
	if i := strings.Index(rest, marker); i >= 0 {
		if emit {
			s.content(rest[:i])
		}
		s.markStart = s.pos + i
		s.pos += i + len(marker)
		return true
	}
	keep := 0
	if !s.final {
		keep = held(rest, marker)
	}
	if emit {
		s.content(rest[:len(rest)-keep])
	}
	s.pos += len(rest) - keep
	return false
}

// skipWS moves pos past whitespace and returns the rest.
func (s *Stream) skipWS() string {
	rest := s.text[s.pos:]
	t := strings.TrimLeft(rest, " \t\r\n")
	s.pos += len(rest) - len(t)
	return t
}
